package testkit

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Proc is a child process a test started, with its stdout and stderr in one LogBuffer.
type Proc struct {
	Cmd  *exec.Cmd
	Out  *LogBuffer
	done chan struct{}
}

// Start starts cmd with its stdout and stderr going to a new LogBuffer, killed with SIGKILL
// should the test binary die first (on Linux), and watches for its exit. It fails tb when cmd
// does not start. Stopping it is the caller's business (Stop, Kill, or a tb.Cleanup of
// either).
func Start(tb testing.TB, cmd *exec.Cmd) *Proc {
	tb.Helper()
	p := &Proc{Cmd: cmd, Out: &LogBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Out, p.Out
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p
}

// Done is closed once the process has exited and been waited for.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill kills the process with SIGKILL and waits for it to exit.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Stop asks the process to exit with SIGTERM and waits up to grace for it; past that it kills
// it (SIGKILL). It reports whether the process exited within grace.
func (p *Proc) Stop(grace time.Duration) bool {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		p.Kill()
		return false
	}
}

// PIDs returns the processes listed in /proc for which keep returns true. It fails tb when
// /proc cannot be read.
func PIDs(tb testing.TB, keep func(pid int) bool) []int {
	tb.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && keep(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
