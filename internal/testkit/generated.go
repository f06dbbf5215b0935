package testkit

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireGenerated runs the generator script with args and a temporary output directory as its
// last argument, and requires the committed files below dir to match what it wrote byte for
// byte, with no file missing or extra (hand-written doc.go files, package comments, excepted).
// label names dir in messages ("api/gen"). The script's exit status 3 means it cannot run here
// (no protoc and not root to install it): a skip on a developer's machine, a failure where the
// lab is required (OVSPLANE_REQUIRE_LAB=1).
func RequireGenerated(t *testing.T, label, dir, script string, args ...string) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(script, append(args, out)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 && os.Getenv("OVSPLANE_REQUIRE_LAB") != "1" {
			t.Skipf("cannot regenerate: %s", bytes.TrimSpace(stderr.Bytes()))
		}
		t.Fatalf("%s: %v\n%s", strings.Join(append([]string{filepath.Base(script)}, args...), " "), err, stderr.Bytes())
	}
	want := readTree(t, out)
	got := readTree(t, dir)
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s/%s is missing: run `make proto` and commit it", label, name)
		case !bytes.Equal(g, w):
			t.Errorf("%s/%s is stale: run `make proto` and commit it", label, name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && filepath.Base(name) != "doc.go" {
			t.Errorf("%s/%s is not produced by the generators: delete it or run `make proto`", label, name)
		}
	}
}

// readTree reads every file below root, keyed by its path relative to root.
func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatalf("reading %s: %v", root, err)
	}
	return files
}
