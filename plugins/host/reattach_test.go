package host

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/internal/wire"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

func TestReattachEnvIsReservedByTheConfigLoader(t *testing.T) {
	if config.EnvPluginReattach != wire.ReattachEnv || ReattachEnv != wire.ReattachEnv {
		t.Fatalf("config %q, host %q, api %q", config.EnvPluginReattach, ReattachEnv, wire.ReattachEnv)
	}
}

// TestDebugReattach: a plugin an author runs by hand in debug mode prints its reattach line;
// a host given that line attaches to it instead of starting the binary, calls go to it, and
// Close leaves it running.
func TestDebugReattach(t *testing.T) {
	f := newFixture(t)
	p := f.install("v1", "debugme")
	cmd := exec.Command(binaries["v1"])
	cmd.Args = []string{"debugme"}
	cmd.Dir = t.TempDir()
	cmd.Env = []string{sdk.DebugEnv + "=1", "PATH=/usr/bin:/bin"}
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	must(t, err)
	value, ok := strings.CutPrefix(strings.TrimSpace(line), wire.ReattachEnv+"=")
	if !ok {
		t.Fatalf("reattach line %q", line)
	}
	f.opts.Reattach = strings.Trim(value, "'")
	f.start(p)
	st := f.status("debugme")
	if st.State != StateRunning || !st.Reattached || st.PID != cmd.Process.Pid {
		t.Fatalf("status %+v (plugin pid %d)", st, cmd.Process.Pid)
	}
	pp, _, _ := f.h.PortProvider("debugme-port")
	if _, err := pp.Attach(t.Context(), port("debugme", "d0", nil)); err != nil {
		t.Fatal(err)
	}
	if f.started("debugme") != nil {
		t.Errorf("the host started the binary itself")
	}
	must(t, f.h.Close(t.Context()))
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("Close ended the author's process: %v", err)
	}

}

// TestUnresponsivePluginRestarted: a plugin that stops answering (SIGSTOP) fails its health
// check and is replaced by a new process.
func TestUnresponsivePluginRestarted(t *testing.T) {
	f := newFixture(t)
	f.opts.CallTimeout = 300 * time.Millisecond
	f.start(f.install("v1", "frozen"))
	pid := f.status("frozen").PID
	must(t, syscall.Kill(pid, syscall.SIGSTOP))
	f.waitFor("a new process", func() bool {
		st := f.status("frozen")
		return st.State == StateRunning && st.PID != 0 && st.PID != pid
	})
	st := f.status("frozen")
	if !strings.Contains(st.LastError, `plugin "frozen": health check`) {
		t.Errorf("last error %q", st.LastError)
	}
}
