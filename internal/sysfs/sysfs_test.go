package sysfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
