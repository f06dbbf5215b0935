package simidxd_test

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
)

var update = flag.Bool("update", false, "rewrite the testdata golden listings")

// The simulator is a dsa.FS.
var _ dsa.FS = (*simidxd.Sim)(nil)

const (
	devs    = "sys/bus/dsa/devices/"
	drivers = "sys/bus/dsa/drivers/"
	bdf     = "0000:6a:01.0"
	pciDev  = "sys/bus/pci/devices/" + bdf
)

// boot writes variant v into a fresh directory and opens it.
func boot(t *testing.T, v simidxd.Variant) *simidxd.Sim {
	t.Helper()
	dir := t.TempDir()
	if err := simidxd.Write(dir, v); err != nil {
		t.Fatal(err)
	}
	s, err := simidxd.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// do performs writes that must succeed, each "path=value".
func do(t *testing.T, s *simidxd.Sim, writes ...string) {
	t.Helper()
	for _, w := range writes {
		p, v, _ := strings.Cut(w, "=")
		if err := s.WriteFile(p, v); err != nil {
			t.Fatalf("write %s: %v", w, err)
		}
	}
}

// read reads an attribute that must be readable.
func read(t *testing.T, s *simidxd.Sim, p string) string {
	t.Helper()
	v, err := s.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return v
}

// want checks that an attribute reads v.
func want(t *testing.T, s *simidxd.Sim, p, v string) {
	t.Helper()
	if got := read(t, s, p); got != v {
		t.Errorf("%s = %q, want %q", p, got, v)
	}
}

// wantErrno checks that err is a *fs.PathError carrying errno.
func wantErrno(t *testing.T, what string, err error, errno syscall.Errno) {
	t.Helper()
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, errno) {
		t.Errorf("%s: got %v, want a *fs.PathError with %v (%d)", what, err, errno, int(errno))
	}
}

func exists(s *simidxd.Sim, p string) bool {
	_, err := os.Lstat(filepath.Join(s.Dir(), p))
	return err == nil
}

// configure gives wq0.0 of dsa0 a working user configuration in group 0 with engine0.0.
func configure(t *testing.T, s *simidxd.Sim) {
	t.Helper()
	do(t, s,
		devs+"engine0.0/group_id=0",
		devs+"wq0.0/group_id=0",
		devs+"wq0.0/mode=dedicated",
		devs+"wq0.0/type=user",
		devs+"wq0.0/name=dpdk_wq0.0",
		devs+"wq0.0/priority=10",
		devs+"wq0.0/size=32",
	)
}

// golden compares got with testdata/<name>, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test ./dsa/simidxd -run %s -update creates it)", err, t.Name())
	}
	if string(b) != got {
		wl, gl := strings.Split(string(b), "\n"), strings.Split(got, "\n")
		for i := 0; i < max(len(wl), len(gl)); i++ {
			var w, g string
			if i < len(wl) {
				w = wl[i]
			}
			if i < len(gl) {
				g = gl[i]
			}
			if w != g {
				t.Fatalf("%s differs from the golden file at line %d:\nwant %s\ngot  %s\n(go test ./dsa/simidxd -run %s -update to accept)", file, i+1, w, g, t.Name())
			}
		}
	}
}
