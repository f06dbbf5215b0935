package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/test/lab"
)

// buildVsctl builds this command into a temporary directory and returns the binary's path.
func buildVsctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vsctl")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// complete runs the bash completion function on words (the last one being completed) and
// returns the candidates.
func complete(t *testing.T, words ...string) []string {
	t.Helper()
	script, err := filepath.Abs("../../contrib/bash-completion/vsctl")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); _vsctl; printf '%s\n' "${COMPREPLY[@]}"`, script)
	cmd.Args = append(cmd.Args, words...)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("completion of %q: %v\n%s", words, err, out)
	}
	return strings.Fields(string(out))
}

func TestBashCompletion(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	bin := buildVsctl(t)
	db := lab.StartOVSDB(t)
	db.Vsctl(t, "--no-wait", "add-br", "br0", "--", "add-br", "brq", "--", "add-port", "br0", "eth7")
	dbArg := "--db=" + db.Endpoint
	cases := []struct {
		words []string
		want  string
	}{
		{[]string{bin, "add-b"}, "add-bond-iface add-br add-bond"},
		{[]string{bin, "--no-w"}, "--no-wait"},
		{[]string{bin, "--may-e"}, "--may-exist"},
		{[]string{bin, dbArg, "add-port", "b"}, "br0 brq"},
		{[]string{bin, dbArg, "add-port", "br0", "eth8", "--", "del-port", "br0", "e"}, "eth7"},
		{[]string{bin, dbArg, "iface-to-br", "e"}, "eth7"},
		{[]string{bin, dbArg, "set-fail-mode", "br0", "s"}, "standalone secure"},
		{[]string{bin, "list", "Br"}, "Bridge"},
		{[]string{bin, "br-exists", "br0", "extra"}, ""},
		// The daemon commands and options, which --commands and --options do not list.
		{[]string{bin, "ove"}, "overlay"},
		{[]string{bin, "--dae"}, "--daemon="},
		{[]string{bin, "--daemon", "unix:/run/x.sock", "plugin", "st"}, "status stats"},
		{[]string{bin, "plugin", "--format=json", "l"}, "list"},
		{[]string{bin, "overlay", "ro"}, "routes"},
		{[]string{bin, "overlay", "routes", "x"}, ""},
	}
	for _, tc := range cases {
		got := strings.Join(complete(t, tc.words...), " ")
		if got != tc.want {
			t.Errorf("completing %q: got %q, want %q", tc.words[1:], got, tc.want)
		}
	}
}

// The daemon commands' completion asks the daemon named on the line for plugin names, and
// completes --format's values; no Open vSwitch needed.
func TestBashCompletionDaemonValues(t *testing.T) {
	bin := buildVsctl(t)
	fake, addr := serveFake(t, 0)
	fake.SetPlugins([]model.PluginInfo{{Name: "vdpa", Version: "1"}, {Name: "stripe", Version: "1"}})
	cases := []struct {
		words []string
		want  string
	}{
		{[]string{bin, "--daemon=" + addr, "plugin", "status", ""}, "stripe vdpa"},
		{[]string{bin, "--daemon=" + addr, "plugin", "stats", "v"}, "vdpa"},
		{[]string{bin, "--daemon=" + addr, "plugin", "list", ""}, ""},
		{[]string{bin, "--format="}, "--format=table --format=json"},
		{[]string{bin, "plugin", "--format=j"}, "--format=json"},
	}
	for _, tc := range cases {
		got := strings.Join(complete(t, tc.words...), " ")
		if got != tc.want {
			t.Errorf("completing %q: got %q, want %q", tc.words[1:], got, tc.want)
		}
	}
}
