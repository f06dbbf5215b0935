package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
)

// completeDaemon runs contrib/bash-completion/ovsplaned's function on words (the last one
// being completed) in bash and returns the candidates.
func completeDaemon(t *testing.T, words ...string) []string {
	t.Helper()
	script, err := filepath.Abs("../../contrib/bash-completion/ovsplaned")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-c", `source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); _ovsplaned; printf '%s\n' "${COMPREPLY[@]}"`, script)
	cmd.Args = append(cmd.Args, words...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("completion of %q: %v\n%s", words, err, out)
	}
	return strings.Fields(string(out))
}

// The completion takes the options from the binary's own --help, and knows the values of
// the options that take a fixed set, whether bash split "--opt=value" at "=" or not.
func TestBashCompletionOvsplaned(t *testing.T) {
	bin := testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/ovsplaned")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "plugins-here"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		words []string
		want  string
	}{
		{[]string{bin, "--lo"}, "--log-level= --log-format="},
		{[]string{bin, "--once", "--emb"}, "--embedded"},
		{[]string{bin, "--vers"}, "--version"},
		{[]string{bin, "--he"}, "--help"},
		{[]string{bin, "--api-auth-readers-g"}, "--api-auth-readers-gids= --api-auth-readers-groups="},
		{[]string{bin, "--log-level", "w"}, "warn"},
		{[]string{bin, "--log-level", "=", ""}, "debug info warn error"},
		{[]string{bin, "--log-format=j"}, "--log-format=json"},
		{[]string{bin, "--sandbox-dpdk", "o"}, "on off"},
		{[]string{bin, "--plugin-dir", dir + "/plugins-"}, dir + "/plugins-here"},
		{[]string{bin, "--timeout", "1"}, ""},
	}
	for _, tc := range cases {
		got := strings.Join(completeDaemon(t, tc.words...), " ")
		if got != tc.want {
			t.Errorf("completing %q: got %q, want %q", tc.words[1:], got, tc.want)
		}
	}
	// Every option of the help completes from an empty word.
	all := " " + strings.Join(completeDaemon(t, bin, ""), " ") + " "
	out, err := exec.CommandContext(t.Context(), bin, "--help").Output()
	if err != nil {
		t.Fatalf("ovsplaned --help: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "--") {
			continue
		}
		if !strings.Contains(all, " "+f[0]+" ") && !strings.Contains(all, " "+f[0]+"= ") {
			t.Errorf("option %s of --help is not completed (got %s)", f[0], all)
		}
	}
}

// SIGHUP, the systemd unit's ExecReload, makes the running daemon re-read its configuration
// file: a bridge added to the file appears, and a broken file is rejected with the running
// state kept.
func TestSIGHUPReloadsConfiguration(t *testing.T) {
	bin := testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/ovsplaned")
	vsctl := testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/vsctl")
	dir := testkit.ShortTempDir(t, "ovsplaned-hup")
	conf := filepath.Join(dir, "ovsplaned.yaml")
	sock := filepath.Join(dir, "api.sock")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	header := "api:\n  listen: [unix:" + sock + "]\nbridges:\n  - name: br-a\n"
	write(header)
	cmd := exec.Command(bin, "--config", conf, "--embedded", "--data-dir", dir, "--log-level", "info")
	cmd.Env = filterEnv(os.Environ())
	p := testkit.Start(t, cmd)
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("SIGTERM: %v", err)
		}
		<-p.Done()
	})
	// The daemon's API through vsctl, as an operator checks it.
	status := func() string {
		out, _ := exec.CommandContext(t.Context(), vsctl, "--daemon=unix:"+sock, "status").CombinedOutput()
		return string(out)
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		testkit.EventuallyTrue(t, time.Minute, 50*time.Millisecond, what, func() bool {
			if p.Exited() {
				t.Fatalf("the daemon exited:\n%s", p.Out.String())
			}
			return ok()
		})
	}
	wait("bridge br-a", func() bool { return strings.Contains(status(), "bridge/br-a") })

	write(header + "  - name: br-b\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wait("the reload", func() bool { return strings.Contains(p.Out.String(), "configuration reloaded") })
	wait("bridge br-b", func() bool { return strings.Contains(status(), "bridge/br-b") })

	write(header + "  - name: br-b\n    no_such_key: 1\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wait("the rejected reload", func() bool { return strings.Contains(p.Out.String(), "reload rejected") })
	if st := status(); !strings.Contains(st, "bridge/br-a") || !strings.Contains(st, "bridge/br-b") {
		t.Errorf("after a rejected reload the running state changed:\n%s", st)
	}
	if p.Exited() {
		t.Fatalf("the daemon exited after a rejected reload:\n%s", p.Out.String())
	}
}
