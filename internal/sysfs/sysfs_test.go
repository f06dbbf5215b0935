package sysfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/internal/sysfs"
)

func TestRoot(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sys/devices/d0"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sys/devices/d0/attr"), []byte("42\n"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "sys/bus"), 0o755))
	must(os.Symlink("../devices/d0", filepath.Join(dir, "sys/bus/d0")))
	r := sysfs.New(dir)
	if v, err := r.ReadFile("sys/bus/d0/attr"); err != nil || v != "42" {
		t.Errorf("ReadFile through a link: %q %v", v, err)
	}
	if p, err := r.Resolve("sys/bus/d0"); err != nil || p != "sys/devices/d0" {
		t.Errorf("Resolve: %q %v", p, err)
	}
	must(r.WriteFile("sys/devices/d0/attr", "7"))
	if v, _ := r.ReadFile("sys/devices/d0/attr"); v != "7" {
		t.Errorf("after write: %q", v)
	}
	if err := r.WriteFile("sys/devices/d0/missing", "1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write to a missing attribute: %v", err)
	}
	for _, bad := range []string{"/etc/passwd", "../x", "sys/../../x"} {
		if _, err := r.ReadFile(bad); err == nil {
			t.Errorf("%s: read outside the root", bad)
		}
	}
	if _, err := sysfs.Join("sys/a", "../../../x"); err == nil {
		t.Error("Join let a link leave the root")
	}
	if names, err := r.ReadDir("sys"); err != nil || len(names) != 2 || names[0] != "bus" {
		t.Errorf("ReadDir: %v %v", names, err)
	}
}

func TestRootChownChmod(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "dev/dsa"), 0o755); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "dev/dsa/wq0.0")
	if err := os.WriteFile(node, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := sysfs.New(dir)
	if err := r.Chmod("dev/dsa/wq0.0", 0o660); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(node)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 {
		t.Errorf("mode after Chmod: %v, want 0660", fi.Mode().Perm())
	}
	// Chown to the caller's own ids works for any user; the ids it sets must read back.
	uid, gid := os.Getuid(), os.Getgid()
	if err := r.Chown("dev/dsa/wq0.0", uid, gid); err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no Stat_t from %T", fi.Sys())
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("owner %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
	if os.Getuid() == 0 {
		if err := r.Chown("dev/dsa/wq0.0", 4242, 4343); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(node)
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 4242 || st.Gid != 4343 {
			t.Errorf("owner after Chown as root: %d:%d, want 4242:4343", st.Uid, st.Gid)
		}
	}
	for _, bad := range []string{"/dev/dsa/wq0.0", "../wq0.0"} {
		if err := r.Chmod(bad, 0o600); err == nil {
			t.Errorf("Chmod %s: changed a file outside the root", bad)
		}
		if err := r.Chown(bad, uid, gid); err == nil {
			t.Errorf("Chown %s: changed a file outside the root", bad)
		}
	}
	if err := r.Chmod("dev/dsa/missing", 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Chmod of a missing node: %v", err)
	}
}

// TestReadFileBound: ReadFile reads a file of MaxFileBytes and refuses a longer one with an
// error naming it, reading no more than the bound past it.
func TestReadFileBound(t *testing.T) {
	dir := t.TempDir()
	r := sysfs.New(dir)
	if err := os.WriteFile(filepath.Join(dir, "fits"), bytes.Repeat([]byte("a"), sysfs.MaxFileBytes), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadFile("fits"); err != nil || len(got) != sysfs.MaxFileBytes {
		t.Errorf("ReadFile(fits) = %d bytes, %v; want %d", len(got), err, sysfs.MaxFileBytes)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("a"), sysfs.MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadFile("big"); err == nil || !strings.Contains(err.Error(), `"big"`) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("ReadFile(big) = %d bytes, %v; want an error naming the file", len(got), err)
	}
}
