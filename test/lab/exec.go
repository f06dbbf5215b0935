//go:build linux

package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// cmdTimeout bounds every short command the lab runs for a test-taking helper (ovs-vsctl, ip, tc…).
const cmdTimeout = 30 * time.Second

// pollInterval is how often WaitFor and the start-up waits look again.
const pollInterval = 100 * time.Millisecond

// command builds an exec.Cmd for name and args with env appended to the test's environment.
func command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// runCmd runs cmd to completion and returns its trimmed stdout and stderr. The error names the
// command line, wraps the exec error (and ctx's error when ctx ended first) and quotes stderr.
func runCmd(ctx context.Context, cmd *exec.Cmd) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	stdout, stderr = strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String())
	if err != nil {
		err = cmdError(ctx, cmd.Args, err, stderr)
	}
	return stdout, stderr, err
}

// run is runCmd for a command built from name, args and extra environment.
func run(ctx context.Context, env []string, name string, args ...string) (stdout, stderr string, err error) {
	return runCmd(ctx, command(ctx, env, name, args...))
}

// cmdError describes a failed command: its command line, the cause and its stderr.
func cmdError(ctx context.Context, argv []string, err error, stderr string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = fmt.Errorf("%w (%w)", ctxErr, err)
	}
	if stderr == "" {
		return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, stderr)
}

// tail returns the last n lines of the file at path, or a note saying why it cannot.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// poll calls cond every pollInterval until it returns nil or ctx ends; then it returns ctx's
// error joined with cond's last error.
func poll(ctx context.Context, cond func(ctx context.Context) error) error {
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

// testContext returns a context for a helper that took t instead of a context: it ends after
// timeout, and, unlike t.Context(), it also works inside t.Cleanup functions (t.Context() is
// cancelled just before they run), so cleanup code may call Vsctl, Appctl or Run.
func testContext(t testing.TB, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(t.Context()), timeout)
}

// WaitFor calls cond every 100 ms until it returns nil. When timeout passes first it fails the
// test with what and cond's last error. cond receives a context that ends at the timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := testContext(t, timeout)
	defer cancel()
	if err := poll(ctx, cond); err != nil {
		t.Fatalf("lab: waiting %v for %s: %v", timeout, what, err)
	}
}
