//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// Netns is a named network namespace (`ip netns add`) owned by one test. A nil *Netns stands
// for the test's own namespace wherever a *Netns is accepted, and its methods run commands
// there.
type Netns struct {
	// Name is the namespace's name under /run/netns: "ovlns", the owner's tag (its pid in base
	// 36, 5 characters) and 8 random characters.
	Name string
}

// NewNetns creates a namespace with a unique name and its loopback up. At cleanup it kills the
// processes still inside (a forgotten server, say) and deletes it, which also destroys the
// interfaces inside. It calls Require(t, NeedNetns) and fails the test on any other error.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	Require(t, NeedNetns)
	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	sweep(t)
	n := &Netns{Name: netnsPrefix + ownerTag(os.Getpid()) + randomChars(8)}
	if _, _, err := ovsproc.Run(ctx, nil, "ip", "netns", "add", n.Name); err != nil {
		t.Fatalf("lab: create netns %s: %v", n.Name, err)
	}
	t.Cleanup(func() { n.cleanup(t) })
	if _, _, err := ovsproc.Run(ctx, nil, "ip", "-n", n.Name, "link", "set", "lo", "up"); err != nil {
		t.Fatalf("lab: netns %s: set lo up: %v", n.Name, err)
	}
	return n
}

// cleanup kills what is left inside the namespace and deletes it.
func (n *Netns) cleanup(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	if out, _, err := ovsproc.Run(ctx, nil, "ip", "netns", "pids", n.Name); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil {
				t.Logf("lab: netns %s: killing leftover pid %d", n.Name, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if _, _, err := ovsproc.Run(ctx, nil, "ip", "netns", "del", n.Name); err != nil {
		t.Errorf("lab: delete netns %s: %v", n.Name, err)
	}
}

// String returns the namespace's name, or "the root namespace" for nil.
func (n *Netns) String() string {
	if n == nil {
		return "the root namespace"
	}
	return n.Name
}

// Command returns an exec.Cmd that runs name with args inside the namespace
// (`ip netns exec <Name> name args…`, which execs, so the process id is the program's), killed
// when ctx ends. For a nil *Netns it runs in the test's namespace.
func (n *Netns) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if n == nil {
		return ovsproc.Command(ctx, nil, name, args...)
	}
	return ovsproc.Command(ctx, nil, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Exec runs name with args inside the namespace until it exits or ctx ends and returns its
// trimmed stdout; the error names the command and the namespace and quotes stderr.
func (n *Netns) Exec(ctx context.Context, name string, args ...string) (string, error) {
	out, _, err := ovsproc.RunCmd(ctx, n.Command(ctx, name, args...))
	if err != nil {
		return out, fmt.Errorf("in %s: %w", n, err)
	}
	return out, nil
}

// Run is Exec with a 30 s timeout that fails the test on error.
func (n *Netns) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	out, err := n.Exec(ctx, name, args...)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	return out
}

// ip runs `ip [-n <Name>] args…` for the namespace (nil: the test's own).
func (n *Netns) ip(ctx context.Context, args ...string) error {
	if n != nil {
		args = append([]string{"-n", n.Name}, args...)
	}
	_, _, err := ovsproc.Run(ctx, nil, "ip", args...)
	return err
}
