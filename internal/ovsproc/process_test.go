//go:build linux

package ovsproc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shSpec returns a Spec running script with sh, its output and "log" in a temporary directory.
func shSpec(t *testing.T, script string) Spec {
	dir := t.TempDir()
	return Spec{Name: "test-daemon", Argv: []string{"sh", "-c", script},
		Out: filepath.Join(dir, "out"), Log: filepath.Join(dir, "log"), Pidfile: filepath.Join(dir, "pid")}
}

func TestStopEscalates(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		graceful func(p *Process) func(ctx context.Context) error
		wantErr  string // "" for nil
	}{
		{name: "SIGTERM without a graceful step", script: "exec sleep 60"},
		{name: "graceful works", script: "exec sleep 60",
			graceful: func(p *Process) func(ctx context.Context) error {
				return func(context.Context) error { _ = p.signalForTest(); return nil }
			}},
		{name: "graceful fails, SIGTERM works", script: "exec sleep 60",
			graceful: func(*Process) func(ctx context.Context) error {
				return func(context.Context) error { return errors.New("no control socket") }
			},
			wantErr: "graceful exit: no control socket; SIGTERM worked"},
		{name: "SIGTERM ignored, SIGKILL", script: "trap '' TERM; echo ready; while :; do sleep 0.1; done",
			wantErr: "still running after SIGTERM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := shSpec(t, tt.script)
			p, err := Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tt.script, "ready") { // the trap must be set before SIGTERM
				_ = Poll(t.Context(), func(context.Context) error {
					if Tail(spec.Out, 1) != "ready" {
						return errors.New("not ready")
					}
					return nil
				})
			}
			var graceful func(ctx context.Context) error
			if tt.graceful != nil {
				graceful = tt.graceful(p)
			}
			err = p.Stop(t.Context(), graceful)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Stop = %v, want …%q…", err, tt.wantErr)
			}
			if !p.Exited() || !p.StoppedOnPurpose() || Alive(p.PID()) {
				t.Fatalf("after Stop: exited %v, on purpose %v, alive %v", p.Exited(), p.StoppedOnPurpose(), Alive(p.PID()))
			}
			if p.Stop(t.Context(), nil) != nil {
				t.Error("a second Stop failed")
			}
		})
	}
}

// signalForTest stands in for `ovs-appctl exit`: it asks the process to exit with SIGINT.
func (p *Process) signalForTest() error {
	proc, err := os.FindProcess(p.pid)
	if err != nil {
		return err
	}
	return proc.Signal(os.Interrupt)
}

func TestWatchEndsWhenTheDaemonExits(t *testing.T) {
	p, err := Start(shSpec(t, "echo boom; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := p.Watch(t.Context())
	defer stop()
	err = WaitSocket(ctx, filepath.Join(t.TempDir(), "never.sock"))
	if !errors.Is(err, ErrExited) {
		t.Fatalf("WaitSocket = %v, want ErrExited", err)
	}
	report := p.Report(err).Error()
	for _, want := range []string{"test-daemon (pid ", "exited: exit status 3", "boom", "(cannot read: "} {
		if !strings.Contains(report, want) {
			t.Errorf("report %q lacks %q", report, want)
		}
	}
}

func TestDaemonRefusesASecondProcess(t *testing.T) {
	d := NewDaemon(shSpec(t, "exec sleep 60"))
	if d.Current() != nil || d.Running() != nil || d.Current().PID() != 0 {
		t.Fatal("a new daemon has a process")
	}
	p, err := d.Start()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Start(); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Start = %v, want already running", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := d.Stop(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if d.Running() != nil || d.Current() != p || p.Err() == nil {
		t.Fatalf("after Stop: running %v, current %v, err %v", d.Running(), d.Current(), p.Err())
	}
	if _, err := d.Start(); err != nil {
		t.Fatalf("start again: %v", err)
	}
	if err := d.Stop(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

func TestKillStaleKillsOnlyItsOwnDaemon(t *testing.T) {
	spec := shSpec(t, "exec sleep 60")
	other, err := Start(spec) // a "daemon" without spec's --pidfile= argument
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop(context.WithoutCancel(t.Context()), nil)
	if err := os.WriteFile(spec.Pidfile, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid, err := KillStale(t.Context(), spec); pid != 0 || err != nil {
		t.Fatalf("KillStale of pid 1 = %d, %v", pid, err)
	}
	ours := spec
	ours.Argv = []string{"sh", "-c", "while :; do sleep 0.1; done", "sh", "--pidfile=" + spec.Pidfile}
	p, err := Start(ours)
	if err != nil {
		t.Fatal(err)
	}
	writePid := func(pid int) {
		if err := os.WriteFile(spec.Pidfile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writePid(other.PID())
	if pid, err := KillStale(t.Context(), spec); pid != 0 || err != nil || !Alive(other.PID()) {
		t.Fatalf("KillStale of a foreign pid = %d, %v", pid, err)
	}
	writePid(p.PID())
	if pid, err := KillStale(t.Context(), spec); pid != p.PID() || err != nil {
		t.Fatalf("KillStale = %d, %v; want %d", pid, err, p.PID())
	}
	<-p.Done()
	if err := WaitReleased(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
}
