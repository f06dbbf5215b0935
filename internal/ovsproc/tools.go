package ovsproc

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// PollInterval is how often Poll, and so the start-up waits, look again.
const PollInterval = 100 * time.Millisecond

// Command builds an exec.Cmd for name and args, killed when ctx ends, with env appended to this
// process's environment. Its WaitDelay is 2 s, so a child that leaves its output open to a
// grandchild does not hold Run up.
func Command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// RunCmd runs cmd (built with ctx, e.g. by Command) to completion and returns its trimmed
// stdout and stderr. The error names the command line, wraps the cause (ctx's cause first when
// ctx ended) and quotes stderr.
func RunCmd(ctx context.Context, cmd *exec.Cmd) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	stdout, stderr = strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String())
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
		}
		err = fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
		if stderr != "" {
			err = fmt.Errorf("%w: %s", err, stderr)
		}
	}
	return stdout, stderr, err
}

// Run is RunCmd of Command(ctx, env, name, args…).
func Run(ctx context.Context, env []string, name string, args ...string) (stdout, stderr string, err error) {
	return RunCmd(ctx, Command(ctx, env, name, args...))
}

// Poll calls cond every PollInterval until it returns nil or ctx ends; then it returns ctx's
// cause with cond's last error. A last try that failed only because ctx ended during it (it
// would say no more than that the deadline passed) does not hide the try before it: the
// error then quotes the last try that failed while ctx was live, which says what was missing.
func Poll(ctx context.Context, cond func(ctx context.Context) error) error {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	var last error // the last error of a try that ctx's end did not cut short
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last try: %w)", context.Cause(ctx), last)
		case <-t.C:
		}
	}
}

// WaitSocket polls until the unix socket at path accepts connections (each one is closed at
// once) or ctx ends.
func WaitSocket(ctx context.Context, path string) error {
	return Poll(ctx, func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// Tools runs the OVS command-line tools against one instance.
type Tools struct {
	// Env is added to the tools' environment (Layout.Env: OVS_RUNDIR…).
	Env []string
	// Endpoint is the OVSDB endpoint ovs-vsctl connects to (Layout.Endpoint).
	Endpoint string
}

// Vsctl runs `ovs-vsctl --db=<Endpoint> args…` until it exits or ctx ends, and returns its
// trimmed stdout and stderr; the error is Run's. ovs-vsctl exits 0 when ovs-vswitchd rejects an
// interface: it only prints "Error detected while setting up 'X'" on stderr.
func (t Tools) Vsctl(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	return Run(ctx, t.Env, "ovs-vsctl", append([]string{"--db=" + t.Endpoint}, args...)...)
}

// Appctl runs `ovs-appctl -t <ctl> args…` until it exits or ctx ends, and returns its trimmed
// stdout and stderr; the error is Run's.
func (t Tools) Appctl(ctx context.Context, ctl string, args ...string) (stdout, stderr string, err error) {
	return Run(ctx, t.Env, "ovs-appctl", append([]string{"-t", ctl}, args...)...)
}

// WaitApplied raises Open_vSwitch.next_cfg by one and waits until ovs-vswitchd acknowledges it
// in cur_cfg, or ctx ends. (`ovs-vsctl init` would not do: ovs-vsctl waits only for
// transactions that change something, so it returns at once on an initialised database.)
func (t Tools) WaitApplied(ctx context.Context) error {
	out, _, err := t.Vsctl(ctx, "get", "Open_vSwitch", ".", "next_cfg")
	if err != nil {
		return err
	}
	next, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return fmt.Errorf("parse next_cfg %q: %w", out, err)
	}
	want := strconv.FormatInt(next+1, 10)
	if _, _, err := t.Vsctl(ctx, "--no-wait", "set", "Open_vSwitch", ".", "next_cfg="+want); err != nil {
		return err
	}
	_, _, err = t.Vsctl(ctx, "wait-until", "Open_vSwitch", ".", "cur_cfg>="+want)
	return err
}

// VswitchdUp is what WaitVswitchd learnt of a running ovs-vswitchd.
type VswitchdUp struct {
	// Version is the first line of `ovs-appctl version`: "ovs-vswitchd (Open vSwitch) 3.1.0".
	Version string
	// DPDKVersion is Open_vSwitch dpdk_version ("DPDK 22.11.11"); "" unless DPDK was waited for.
	DPDKVersion string
}

// WaitVswitchd waits until the ovs-vswitchd whose unixctl socket is ctl has applied the
// database (WaitApplied), DPDK reports dpdk_initialized=true (only when waitDPDK: DPDK
// initialises at start-up only when dpdk-init=true is in the database by then), and ovs-appctl
// answers. ctx bounds the wait; pass one from Process.Watch so that it ends when the daemon
// dies. Errors say which step failed.
func (t Tools) WaitVswitchd(ctx context.Context, ctl string, waitDPDK bool) (VswitchdUp, error) {
	var up VswitchdUp
	if err := t.WaitApplied(ctx); err != nil {
		return up, fmt.Errorf("waiting for cur_cfg: %w", err)
	}
	if waitDPDK {
		if _, _, err := t.Vsctl(ctx, "wait-until", "Open_vSwitch", ".", "dpdk_initialized=true"); err != nil {
			return up, fmt.Errorf("waiting for dpdk_initialized=true: %w", err)
		}
		v, _, err := t.Vsctl(ctx, "get", "Open_vSwitch", ".", "dpdk_version")
		if err != nil {
			return up, err
		}
		up.DPDKVersion = Unquote(v)
	}
	out, _, err := t.Appctl(ctx, ctl, "version")
	if err != nil {
		return up, fmt.Errorf("waiting for ovs-appctl: %w", err)
	}
	up.Version, _, _ = strings.Cut(out, "\n")
	return up, nil
}

// Unquote removes the double quotes ovs-vsctl puts around some strings; "[]" (no value) is "".
func Unquote(s string) string {
	if s == "[]" {
		return ""
	}
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}
