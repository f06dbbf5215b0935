package cliconv_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
)

// binary is one program of the repository: its package and the name it is installed under.
type binary struct {
	pkg, name string
	plugin    bool
}

// binaries are every program `make build` and `make plugins` build for `make install`.
var binaries = []binary{
	{"github.com/ovsplane/ovsplane/cmd/ovsplaned", "ovsplaned", false},
	{"github.com/ovsplane/ovsplane/cmd/vsctl", "vsctl", false},
	{"github.com/ovsplane/ovsplane/plugins/vdpa", "ovsplane-plugin-vdpa", true},
	{"github.com/ovsplane/ovsplane/plugins/dsa", "ovsplane-plugin-dsa", true},
	{"github.com/ovsplane/ovsplane/plugins/stripe", "ovsplane-plugin-stripe", true},
	{"github.com/ovsplane/ovsplane/plugins/overlay", "ovsplane-plugin-overlay", true},
	{"github.com/ovsplane/ovsplane/plugins/flowmon", "ovsplane-plugin-flowmon", true},
	{"github.com/ovsplane/ovsplane/examples/veth-reference", "ovsplane-plugin-veth", true},
}

// buildAll builds every binary (once per test binary) and lays them out as `make build
// plugins` does in bin/: the programs at the top, the plugins in plugins/. It returns that
// directory.
func buildAll(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range binaries {
		path := testkit.BuildOnce(t, b.pkg)
		if err := os.Symlink(path, installed(dir, b)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// installed is where b is in a bin/ directory laid out by buildAll.
func installed(bin string, b binary) string {
	if b.plugin {
		return filepath.Join(bin, "plugins", b.name)
	}
	return filepath.Join(bin, b.name)
}

// runBin runs a binary and returns its exit status, stdout and stderr.
func runBin(t *testing.T, path string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	default:
		t.Fatalf("running %s: %v", path, err)
		return -1, "", ""
	}
}

// Every binary follows the conventions: --help prints the usage on stdout and exits 0,
// --version prints one line on stdout and exits 0, a bad flag prints the error and the usage
// on stderr and exits 2. vsctl, a drop-in ovs-vsctl, keeps ovs-vsctl's version line and its
// exit status 1 for a bad option (ZStack and os-vif scripts compare them with ovs-vsctl's).
func TestEveryBinaryHelpVersionBadFlag(t *testing.T) {
	dir := buildAll(t)
	for _, b := range binaries {
		path := installed(dir, b)
		for _, help := range []string{"--help", "-h"} {
			code, stdout, stderr := runBin(t, path, help)
			if code != 0 || !strings.Contains(strings.ToLower(stdout), "usage:") || stderr != "" {
				t.Errorf("%s %s: exit %d, stdout %.80q, stderr %.200q; want 0, the usage on stdout, nothing on stderr", b.name, help, code, stdout, stderr)
			}
		}
		code, stdout, stderr := runBin(t, path, "--version")
		want := b.name + " (ovsplane) " + model.Version + "\n"
		if b.name == "vsctl" {
			want = "vsctl (Open vSwitch) 3.1.0\nDB Schema 8.3.1\n"
		}
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("%s --version: exit %d, stdout %q, stderr %q; want 0 and %q", b.name, code, stdout, stderr, want)
		}
		code, stdout, stderr = runBin(t, path, "--no-such-flag")
		wantCode, wantErr := 2, "usage:"
		if b.name == "vsctl" {
			wantCode, wantErr = 1, "unrecognized option '--no-such-flag'"
		}
		if code != wantCode || stdout != "" || !strings.Contains(stderr, "no-such-flag") || !strings.Contains(stderr, wantErr) {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %.300q; want %d, the error and %q on stderr", b.name, code, stdout, stderr, wantCode, wantErr)
		}
	}
}
