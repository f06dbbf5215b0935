package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Build runs `go build <flags> -o out pkg` from the test's working directory and fails tb
// with the compiler's output when it fails. pkg is an import path or a directory relative to
// the working directory.
func Build(tb testing.TB, pkg, out string, flags ...string) {
	tb.Helper()
	if err := build(pkg, out, flags, nil); err != nil {
		tb.Fatal(err)
	}
}

func build(pkg, out string, flags, env []string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	cmd := exec.Command("go", args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

type buildResult struct {
	once sync.Once
	path string
	err  error
}

var builds sync.Map // pkg and flags -> *buildResult

// BuildOnce builds pkg with flags (see Build) once per test binary and returns the binary's
// path. The binary lives in a directory of its own below os.TempDir, kept for the life of the
// test binary (later tests use it too) and not removed.
func BuildOnce(tb testing.TB, pkg string, flags ...string) string {
	tb.Helper()
	v, _ := builds.LoadOrStore(pkg+"\x00"+strings.Join(flags, "\x00"), &buildResult{})
	r := v.(*buildResult)
	r.once.Do(func() {
		dir, err := os.MkdirTemp("", "testkit-bin-")
		if err != nil {
			r.err = err
			return
		}
		name := filepath.Base(pkg)
		if name == "." || name == string(filepath.Separator) {
			name = "bin"
		}
		r.path = filepath.Join(dir, name)
		r.err = build(pkg, r.path, flags, nil)
	})
	if r.err != nil {
		tb.Fatal(r.err)
	}
	return r.path
}

// InstallPlugin builds the plugin main package pkg as `make plugins` does (CGO_ENABLED=0,
// -trimpath, -buildvcs=false) into dir/name, creating dir with mode 0755 (what the plugin
// host's trust checks want), and returns the binary's SHA-256 in hex, the pin of its config
// entry.
func InstallPlugin(tb testing.TB, pkg, dir, name string) (sum string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // MkdirAll leaves an existing dir as it is
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := build(pkg, bin, []string{"-trimpath", "-buildvcs=false"}, []string{"CGO_ENABLED=0"}); err != nil {
		tb.Fatal(err)
	}
	return FileSHA256(tb, bin)
}

// FileSHA256 returns the SHA-256 of the file at path in hex.
func FileSHA256(tb testing.TB, path string) string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
