package vdpa_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
	"github.com/ovsplane/ovsplane/vdpa/simkernel"
)

var update = flag.Bool("update", false, "rewrite testdata golden files and derived fixtures")

// loadFixture loads testdata/<name>.fixture.
func loadFixture(t *testing.T, name string) *simhost.Fixture {
	t.Helper()
	f, err := simhost.Load(filepath.Join("testdata", name+".fixture"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// boot materialises a fixture into a temp dir and returns its fake kernel and a host over it with
// short timeouts.
func boot(t *testing.T, f *simhost.Fixture) (*simkernel.Kernel, *vdpa.Host) {
	t.Helper()
	k, err := simkernel.New(t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	return k, k.Host(vdpa.Config{PollInterval: 5 * time.Millisecond, CharDevTimeout: 300 * time.Millisecond,
		AppearTimeout: 200 * time.Millisecond})
}

func bootNamed(t *testing.T, name string) (*simkernel.Kernel, *vdpa.Host) {
	t.Helper()
	return boot(t, loadFixture(t, name))
}

// dump returns the canonical text of the kernel's current state.
func dump(t *testing.T, k *simkernel.Kernel) string {
	t.Helper()
	f, err := k.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return string(f.Format())
}

// golden compares got with testdata/<name>.golden, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./vdpa -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file (go test ./vdpa -update to accept):\n%s", file, diffLines(string(want), string(got)))
	}
}

// diffLines is a small line diff for failure messages.
func diffLines(a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	in := func(s string, l []string) bool {
		for _, x := range l {
			if x == s {
				return true
			}
		}
		return false
	}
	var out bytes.Buffer
	for _, l := range al {
		if !in(l, bl) {
			out.WriteString("- " + l + "\n")
		}
	}
	for _, l := range bl {
		if !in(l, al) {
			out.WriteString("+ " + l + "\n")
		}
	}
	return out.String()
}

func splitLines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

var ctx = context.Background()
