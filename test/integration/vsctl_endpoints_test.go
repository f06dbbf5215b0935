//go:build linux

package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// The vsctl differential suite (test/vsctldiff) runs over unix sockets; these tests drive the
// built vsctl over the other endpoint kinds ovs-vsctl users have: ssl: with mutual TLS, and
// the members of a Raft cluster with --leader-only (the default) and --no-leader-only.

// vsctlBinary builds cmd/vsctl once per test binary and returns its path.
func vsctlBinary(t *testing.T) string {
	t.Helper()
	return testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/vsctl")
}

// runTool runs name with args and returns stdout, stderr and the exit status (-1 when it did
// not exit by itself, 128+N when killed by signal N).
func runTool(ctx context.Context, env []string, name string, args ...string) (string, string, int) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		code = ee.ExitCode()
	case errors.As(err, &ee):
		code = -1
		if ws, ok := ee.Sys().(interface{ Signal() os.Signal }); ok {
			if s, ok := ws.Signal().(interface{ String() string }); ok && s.String() == "alarm clock" {
				code = 142
			}
		}
	default:
		code = -1
	}
	return strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()), code
}

func TestVsctlOverSSL(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	bin := vsctlBinary(t)
	l := startSSLServer(t)
	srv, client, caPath, roguePath := l.srv, l.client, l.caPath, l.roguePath
	ep := "--db=" + l.ep
	tls := []string{"-p", client.key, "-c", client.cert, "-C", caPath}
	args := func(a ...string) []string { return append(append([]string{ep, "-t", "20"}, tls...), a...) }

	out, errOut, code := runTool(timeout(t, 30*time.Second), srv.env(), bin, args("--no-wait", "add-br", "br0", "--", "add-port", "br0", "p1")...)
	if code != 0 {
		t.Fatalf("vsctl add-br over ssl: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := vsctl(t, srv.env(), append([]string{ep}, append(tls, "list-ports", "br0")...)...); got != "p1" {
		t.Errorf("ovs-vsctl list-ports br0 after vsctl's add-port over ssl = %q, want p1", got)
	}
	if out, _, code := runTool(timeout(t, 30*time.Second), srv.env(), bin, args("port-to-br", "p1")...); code != 0 || out != "br0" {
		t.Errorf("vsctl port-to-br p1 over ssl = %q (exit %d), want br0", out, code)
	}

	// Trusting another CA only: vsctl must refuse the server and change nothing.
	bad := []string{ep, "-t", "5", "-p", client.key, "-c", client.cert, "-C", roguePath, "--no-wait", "add-port", "br0", "p2"}
	if _, errOut, code := runTool(timeout(t, 30*time.Second), srv.env(), bin, bad...); code == 0 {
		t.Errorf("vsctl with an untrusted server certificate succeeded (stderr %q)", errOut)
	} else {
		t.Logf("untrusted server certificate: exit %d, %s", code, errOut)
	}
	// Without certificates an ssl: remote cannot be used at all.
	if _, errOut, code := runTool(timeout(t, 30*time.Second), srv.env(), bin, ep, "-t", "5", "list-br"); code == 0 {
		t.Errorf("vsctl over ssl without certificates succeeded (stderr %q)", errOut)
	}
	if got := vsctl(t, srv.env(), append([]string{ep}, append(tls, "list-ports", "br0")...)...); got != "p1" {
		t.Errorf("list-ports br0 after the refused attempts = %q, want p1 only", got)
	}
}

func TestVsctlOnRaftCluster(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	bin := vsctlBinary(t)
	members := startCluster(t)
	eps := make([]string, len(members))
	for i, m := range members {
		eps[i] = m.endpoint
	}
	all := "--db=" + strings.Join(eps, ",")
	env := members[0].env()
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runTool(timeout(t, 40*time.Second), env, bin, args...)
	}

	if out, errOut, code := run(all, "-t", "30", "--no-wait", "add-br", "br0", "--", "add-port", "br0", "p1"); code != 0 {
		t.Fatalf("vsctl on the cluster: exit %d, %q %q", code, out, errOut)
	}
	leader, err := leaderOf(timeout(t, 30*time.Second), members)
	if err != nil {
		t.Fatal(err)
	}
	var follower *member
	for _, m := range members {
		if m != leader {
			follower = m
			break
		}
	}

	// Leader-only (the default) never settles for a follower: given only one, vsctl gives up
	// at once, with ovs-vsctl's words (which carry no reason) and status.
	_, errOut, code := run("--db="+follower.endpoint, "-t", "10", "--no-wait", "add-port", "br0", "nope")
	_, refErr, refCode := runTool(timeout(t, 40*time.Second), env, "ovs-vsctl", "--db="+follower.endpoint, "-t", "10", "--no-wait", "add-port", "br0", "nope")
	norm := func(s string) string { return strings.TrimPrefix(strings.TrimPrefix(s, "ovs-vsctl: "), "vsctl: ") }
	if code != refCode || norm(errOut) != norm(refErr) {
		t.Errorf("leader-only on a follower: vsctl exit %d %q, ovs-vsctl exit %d %q", code, errOut, refCode, refErr)
	}
	// --no-leader-only accepts the follower, which forwards the write to the leader.
	if out, errOut, code := run("--db="+follower.endpoint, "--no-leader-only", "-t", "30", "--no-wait", "add-port", "br0", "p2"); code != 0 {
		t.Errorf("--no-leader-only via a follower: exit %d, %q %q", code, out, errOut)
	}

	// The leader dies: vsctl given every member finds the new leader by itself.
	t.Logf("killing the leader %s", leader.name)
	leader.kill()
	var survivors []string
	for _, m := range members {
		if m != leader {
			survivors = append(survivors, m.endpoint)
		}
	}
	lab.WaitFor(t, 30*time.Second, "a new leader", func(ctx context.Context) error {
		var rest []*member
		for _, m := range members {
			if m != leader {
				rest = append(rest, m)
			}
		}
		_, err := leaderOf(ctx, rest)
		return err
	})
	if out, errOut, code := run(all, "-t", "30", "--no-wait", "add-port", "br0", "p3"); code != 0 {
		t.Fatalf("vsctl after the leader died: exit %d, %q %q", code, out, errOut)
	}
	if got := vsctl(t, env, "--db="+strings.Join(survivors, ","), "list-ports", "br0"); got != "p1\np2\np3" {
		t.Errorf("ovs-vsctl list-ports br0 = %q, want p1 p2 p3", got)
	}
	if out, _, code := run("--db="+strings.Join(survivors, ","), "-t", "30", "list-ports", "br0"); code != 0 || out != "p1\np2\np3" {
		t.Errorf("vsctl list-ports br0 = %q (exit %d), want p1 p2 p3", out, code)
	}
}
