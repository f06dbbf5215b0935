package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// withArg returns the live processes whose command line has arg.
func withArg(t *testing.T, arg string) []int {
	return testkit.PIDs(t, func(pid int) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && alive(pid) && strings.Contains(string(b), "\x00"+arg+"\x00")
	})
}

// marker is a unique sleep duration: a process of this test can be found by its argv.
func marker(t *testing.T) string {
	return fmt.Sprintf("%d.%03d", 3000+os.Getpid()%1000, time.Now().Nanosecond()%1000)
}

// logTo returns a JSON logger writing to a buffer the test reads.
func logTo(t *testing.T) (*slog.Logger, *testkit.LogBuffer) {
	buf := &testkit.LogBuffer{}
	return slog.New(slog.NewJSONHandler(io.MultiWriter(buf, testkit.TestLog{TB: t}), nil)), buf
}

func shell(script string) sdk.Command {
	return sdk.Command{Path: "/bin/sh", Args: []string{"-c", script}}
}

func startProcess(t *testing.T, opts sdk.ProcessOptions) *sdk.Process {
	t.Helper()
	p, err := sdk.StartProcess(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

func TestCommandValidate(t *testing.T) {
	long := strings.Repeat("x", sdk.MaxProcessArgBytes+1)
	many := make([]string, sdk.MaxProcessArgs+1)
	for _, tc := range []struct {
		name  string
		cmd   sdk.Command
		field string // "" for valid
	}{
		{"ok", sdk.Command{Path: "/bin/echo", Args: []string{"a b", "", "$(rm -rf /)"}, Env: []string{"A=1"}, Dir: "/tmp"}, ""},
		{"relative path", sdk.Command{Path: "bin/echo"}, "path"},
		{"unclean path", sdk.Command{Path: "/bin/../bin/echo"}, "path"},
		{"empty path", sdk.Command{}, "path"},
		{"NUL", sdk.Command{Path: "/bin/echo", Args: []string{"a", "b\x00c"}}, "args[1]"},
		{"long arg", sdk.Command{Path: "/bin/echo", Args: []string{long}}, "args[0]"},
		{"bad UTF-8", sdk.Command{Path: "/bin/echo", Args: []string{"\xff"}}, "args[0]"},
		{"too many", sdk.Command{Path: "/bin/echo", Args: many}, "args"},
		{"too many bytes", sdk.Command{Path: "/bin/echo", Args: []string{long[:4000], long[:4000], long[:4000], long[:4000],
			long[:4000], long[:4000], long[:4000], long[:4000], long[:4000], long[:4000], long[:4000], long[:4000],
			long[:4000], long[:4000], long[:4000], long[:4000], long[:4000]}}, "args"},
		{"env", sdk.Command{Path: "/bin/echo", Env: []string{"=x"}}, "env[0]"},
		{"env no =", sdk.Command{Path: "/bin/echo", Env: []string{"A"}}, "env[0]"},
		{"dir", sdk.Command{Path: "/bin/echo", Dir: "tmp"}, "dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cmd.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *api.Error
			if !errors.As(err, &e) || e.Code != api.InvalidArgument || len(e.Problems) == 0 || e.Problems[0].Field != tc.field {
				t.Errorf("got %v, want a problem on %s", err, tc.field)
			}
		})
	}
}

func TestCheckProgram(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, says := range map[string]string{
		"/bin/sh":                     "",
		filepath.Join(dir, "missing"): "no such file",
		dir:                           "not a regular file",
		plain:                         "not executable",
		"sh":                          "not an absolute path",
	} {
		err := sdk.CheckProgram(path)
		switch {
		case says == "" && err != nil:
			t.Errorf("%s: %v", path, err)
		case says != "" && (err == nil || !strings.Contains(err.Error(), says) || api.CodeOf(err) != api.FailedPrecondition):
			t.Errorf("%s: got %v, want FailedPrecondition saying %q", path, err, says)
		}
	}
	if _, err := sdk.StartProcess(t.Context(), sdk.ProcessOptions{Name: "x", Command: sdk.Command{Path: plain}}); api.CodeOf(err) != api.FailedPrecondition {
		t.Errorf("start of a non-executable file: %v", err)
	}
	if _, err := sdk.StartProcess(t.Context(), sdk.ProcessOptions{Name: "x", Command: sdk.Command{Path: "sleep"}}); api.CodeOf(err) != api.InvalidArgument {
		t.Errorf("start of a relative path: %v", err)
	}
	if _, err := sdk.StartProcess(t.Context(), sdk.ProcessOptions{Name: "two words", Command: sdk.Command{Path: "/bin/sh"}}); api.CodeOf(err) != api.InvalidArgument {
		t.Errorf("start with a bad name: %v", err)
	}
}

// TestProcessRestartStop: the program's output reaches the log line by line with its stream; a
// kill -9 of the program is followed by a restart (a new pid, restarts 1, last exit -9) and the
// death of its own child (the group is killed); Stop leaves nothing in /proc.
func TestProcessRestartStop(t *testing.T) {
	log, buf := logTo(t)
	m := marker(t)
	p := startProcess(t, sdk.ProcessOptions{Name: "job1", Logger: log, MinBackoff: 10 * time.Millisecond,
		Command: shell("echo out-line; echo err-line >&2; /bin/sleep " + m + "; echo never")})
	st := p.Stats()
	if !st.Running || st.PID == 0 || st.Starts != 1 || st.Restarts != 0 {
		t.Fatalf("stats after start %+v", st)
	}
	var child int
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		pids := withArg(t, m)
		if len(pids) != 1 || !strings.Contains(buf.String(), `"stream":"stderr"`) || !strings.Contains(buf.String(), `"line":"out-line"`) {
			return fmt.Errorf("sleep pids %v, log:\n%s", pids, buf.Tail(2000))
		}
		child = pids[0]
		return nil
	})
	if !strings.Contains(buf.String(), `"line":"err-line"`) {
		t.Errorf("stderr line not logged:\n%s", buf)
	}
	first := st.PID
	if err := syscallKill(first); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if st = p.Stats(); !st.Running || st.Restarts != 1 || st.PID == first {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})
	if st.LastExitCode != -9 || st.LastExit != "signal: killed" {
		t.Errorf("last exit %d %q", st.LastExitCode, st.LastExit)
	}
	testkit.EventuallyTrue(t, 10*time.Second, 20*time.Millisecond, "the killed program's child is gone", func() bool { return !alive(child) })
	metrics := map[string]float64{}
	for _, mt := range p.Metrics() {
		metrics[mt.Name] = mt.Value
	}
	if metrics["process_up"] != 1 || metrics["process_restarts_total"] != 1 || metrics["process_pid"] != float64(st.PID) || metrics["process_last_exit_code"] != -9 {
		t.Errorf("metrics %v", metrics)
	}
	second := st.PID
	testkit.EventuallyTrue(t, 10*time.Second, 20*time.Millisecond, "the restarted program runs its sleep", func() bool { return len(withArg(t, m)) == 1 })
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if alive(second) || len(withArg(t, m)) != 0 {
		t.Errorf("after Stop: pid %d alive %v, sleeps %v", second, alive(second), withArg(t, m))
	}
	if st = p.Stats(); st.Running || st.PID != 0 || st.LastExit != "signal: terminated" {
		t.Errorf("stats after stop %+v", st)
	}
	if strings.Contains(buf.String(), `"line":"never"`) {
		t.Errorf("the shell ran on after its sleep was terminated:\n%s", buf)
	}
}

// TestProcessStopEscalates: a program that ignores SIGTERM is killed after StopGrace.
func TestProcessStopEscalates(t *testing.T) {
	log, buf := logTo(t)
	p := startProcess(t, sdk.ProcessOptions{Name: "stubborn", Logger: log, StopGrace: 200 * time.Millisecond,
		Command: shell(`trap "" TERM; echo ready; while :; do /bin/sleep 0.05; done`)})
	testkit.EventuallyTrue(t, 10*time.Second, 20*time.Millisecond, "ready", func() bool { return strings.Contains(buf.String(), `"line":"ready"`) })
	pid := p.Stats().PID
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); alive(pid) || st.LastExitCode != -9 || !strings.Contains(buf.String(), "ignored SIGTERM") {
		t.Errorf("after stop: alive %v, stats %+v\n%s", alive(pid), st, buf)
	}
}

// TestProcessOutputBounds: a line over MaxLineBytes is cut and marked, lines over the rate are
// counted and their number logged.
func TestProcessOutputBounds(t *testing.T) {
	log, buf := logTo(t)
	p := startProcess(t, sdk.ProcessOptions{Name: "chatty", Logger: log, MaxLineBytes: 64, MaxLinesPerSecond: 5, MinBackoff: time.Hour,
		Command: shell(`printf '%0100d\n' 7; i=0; while [ $i -lt 50 ]; do echo line$i; i=$((i+1)); done; echo done; exec /bin/sleep 60`)})
	testkit.EventuallyTrue(t, 10*time.Second, 20*time.Millisecond, "lines dropped", func() bool { return p.Stats().LinesDropped > 0 })
	recs, _ := buf.Records()
	var long string
	for _, r := range recs {
		if line, _ := r["line"].(string); strings.HasPrefix(line, "000") {
			long = line
			if r["truncated"] != true {
				t.Errorf("long line not marked truncated: %v", r)
			}
		}
	}
	if len(long) != 64 {
		t.Errorf("long line logged as %d bytes %q, want 64", len(long), long)
	}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "lines dropped over the rate limit") {
		t.Errorf("drop not reported:\n%s", buf.Tail(3000))
	}
	t.Logf("dropped %d of 52 lines at 5 lines/s", p.Stats().LinesDropped)
}

// TestProcessCrashLoop: a program that exits at once is restarted with backoff, its exit
// status recorded; cancelling the lifetime context ends the supervision.
func TestProcessCrashLoop(t *testing.T) {
	log, _ := logTo(t)
	ctx, cancel := context.WithCancel(t.Context())
	p, err := sdk.StartProcess(ctx, sdk.ProcessOptions{Name: "crash", Logger: log, MinBackoff: 5 * time.Millisecond, MaxBackoff: 40 * time.Millisecond,
		Command: shell("exit 3")})
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 10*time.Second, 10*time.Millisecond, "3 restarts", func() bool { return p.Stats().Restarts >= 3 })
	if st := p.Stats(); st.LastExitCode != 3 || st.LastExit != "exit status 3" {
		t.Errorf("stats %+v", st)
	}
	cancel()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("supervision did not end with its context")
	}
}

// syscallKill sends SIGKILL to pid.
func syscallKill(pid int) error {
	proc, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return proc.Kill()
}

// TestProcessDiesWithPlugin: a plugin process (this test binary, re-run as a helper) starts a
// supervised program from a goroutine whose thread then ends — the program survives that — and
// is killed with SIGKILL: the program does not outlive it.
func TestProcessDiesWithPlugin(t *testing.T) {
	if m := os.Getenv("SDK_PROCESS_HELPER"); m != "" {
		helperPlugin(m)
		return
	}
	m := marker(t)
	cmd := testkitCommand(t, m)
	proc := testkit.Start(t, cmd)
	t.Cleanup(proc.Kill)
	var child int
	testkit.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		pids := withArg(t, m)
		if len(pids) != 1 || !strings.Contains(proc.Out.String(), "helper: started") {
			return fmt.Errorf("supervised sleeps %v; helper output:\n%s", pids, proc.Out)
		}
		child = pids[0]
		return nil
	})
	if ppid := parentOf(t, child); ppid != cmd.Process.Pid {
		t.Fatalf("the sleep's parent is %d, not the helper plugin %d", ppid, cmd.Process.Pid)
	}
	proc.Kill()
	testkit.EventuallyTrue(t, 10*time.Second, 20*time.Millisecond, "the program is gone with its plugin", func() bool { return !alive(child) })
}

func testkitCommand(t *testing.T, m string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessDiesWithPlugin$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SDK_PROCESS_HELPER="+m)
	return cmd
}

// helperPlugin plays a plugin: it supervises /bin/sleep m from a goroutine (as DataPath.Start
// does on a gRPC goroutine) whose OS thread then ends (a goroutine locked to its thread that
// returns), which must not kill the program, and then blocks until killed.
func helperPlugin(m string) {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		_, err := sdk.StartProcess(context.Background(), sdk.ProcessOptions{Name: "sleeper", Command: sdk.Command{Path: "/bin/sleep", Args: []string{m}}})
		done <- err
	}()
	if err := <-done; err != nil {
		fmt.Println("helper:", err)
		os.Exit(1)
	}
	time.Sleep(200 * time.Millisecond) // let the caller's thread end
	fmt.Println("helper: started")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// parentOf reads pid's parent from /proc.
func parentOf(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}
