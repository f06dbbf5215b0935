//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// ovsdbStartTimeout bounds how long ovsdb-server may take to accept connections.
const ovsdbStartTimeout = 15 * time.Second

// OVSDB is a private ovsdb-server holding the Open_vSwitch database, running as a child of the
// test binary in its own temporary directory. The path fields are fixed for its lifetime and
// survive Stop, Start and Restart.
type OVSDB struct {
	// Dir is the private directory: OVS_RUNDIR, OVS_LOGDIR and OVS_DBDIR of every OVS process
	// the lab starts for this database. Bridges' OpenFlow sockets (<bridge>.mgmt) and
	// vhost-user sockets land here. Removed at cleanup.
	Dir string
	// DBPath is the database file, Dir/conf.db.
	DBPath string
	// Sock is the unix socket clients connect to; Endpoint is "unix:"+Sock.
	Sock, Endpoint string
	// CtlPath is the unixctl socket, for ovs-appctl -t.
	CtlPath string
	// LogPath is ovsdb-server's --log-file.
	LogPath string

	layout ovsproc.Layout
	tools  ovsproc.Tools
	d      *ovsproc.Daemon
}

// StartOVSDB creates a fresh Open_vSwitch database from SchemaPath in a new temporary
// directory, starts ovsdb-server on it, waits until it accepts connections and runs
// `ovs-vsctl --no-wait init`. At cleanup it stops the server and removes the directory,
// logging the tail of the server's log when the test failed. It calls Require(t, NeedOVS) and
// fails the test on any other error.
func StartOVSDB(t testing.TB) *OVSDB {
	t.Helper()
	Require(t, NeedOVS)
	sweep(t)
	// Not t.TempDir(): its paths can exceed the 107-byte limit of unix socket paths.
	dir, err := os.MkdirTemp("", dirPrefix+ownerTag(os.Getpid())+"-")
	if err != nil {
		t.Fatalf("lab: create OVSDB directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	o := newOVSDB(dir)
	t.Cleanup(func() { o.cleanup(t) })

	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	if _, _, err := ovsproc.Run(ctx, o.Env(), "ovsdb-tool", "create", o.DBPath, SchemaPath); err != nil {
		t.Fatalf("lab: create database %s: %v", o.DBPath, err)
	}
	o.Start(t)
	o.Vsctl(t, "--no-wait", "init")
	t.Logf("lab: ovsdb-server pid %d serving %s", o.PID(), o.Endpoint)
	return o
}

// newOVSDB lays out the paths of an OVSDB in dir (ovsproc.Layout).
func newOVSDB(dir string) *OVSDB {
	layout := ovsproc.Layout{Dir: dir}
	spec := layout.OVSDBServer()
	return &OVSDB{
		Dir:      dir,
		DBPath:   layout.DBPath(),
		Sock:     layout.Sock(),
		Endpoint: layout.Endpoint(),
		CtlPath:  spec.Ctl,
		LogPath:  spec.Log,
		layout:   layout,
		tools:    ovsproc.Tools{Env: layout.Env(), Endpoint: layout.Endpoint()},
		d:        ovsproc.NewDaemon(spec),
	}
}

// Env returns the OVS_RUNDIR, OVS_LOGDIR and OVS_DBDIR settings ("NAME=value") that confine an
// OVS program to Dir; add them to any OVS tool a test runs itself (ovs-ofctl, ovs-appctl…).
func (o *OVSDB) Env() []string {
	return o.layout.Env()
}

// PID returns the process id of the running ovsdb-server, or 0 when it is stopped.
func (o *OVSDB) PID() int { return o.d.Running().PID() }

// Start starts ovsdb-server on the existing database and socket and waits until it accepts
// connections. It fails the test when the server is already running or does not come up,
// quoting the tail of its log.
func (o *OVSDB) Start(t testing.TB) {
	t.Helper()
	p, err := o.d.Start()
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	ctx, cancel := testContext(t, ovsdbStartTimeout)
	defer cancel()
	ctx, stopWatch := p.Watch(ctx)
	defer stopWatch()
	if err := ovsproc.WaitSocket(ctx, o.Sock); err != nil {
		_ = p.Stop(context.Background(), nil)
		t.Fatalf("lab: %v", p.Report(fmt.Errorf("waiting for %s: %w", o.Sock, err)))
	}
}

// Stop stops ovsdb-server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit; the
// database file is kept. Stopping a stopped server does nothing. Clients see the connection
// drop; ovs-vswitchd keeps running and reconnects after Start.
func (o *OVSDB) Stop(t testing.TB) {
	t.Helper()
	if err := o.d.Stop(context.Background(), nil); err != nil {
		t.Logf("lab: %v", err)
	}
}

// Restart is Stop followed by Start: same database file, same socket path, a new process.
// Used to test that clients reconnect and find their data again.
func (o *OVSDB) Restart(t testing.TB) {
	t.Helper()
	o.Stop(t)
	o.Start(t)
}

// cleanup stops the server at the end of the test, reporting an unexpected earlier death and,
// when the test failed, the tail of the log.
func (o *OVSDB) cleanup(t testing.TB) {
	if p := o.d.Current(); p != nil && p.Exited() && !p.StoppedOnPurpose() {
		t.Logf("lab: ovsdb-server died during the test: %v", p.Err())
	}
	o.Stop(t)
	if t.Failed() {
		t.Logf("lab: tail of %s:\n%s", o.LogPath, ovsproc.Tail(o.LogPath, 40))
	}
}

// Vsctl runs `ovs-vsctl --db=<Endpoint> --timeout=30 args…` and returns its trimmed stdout. It
// fails the test with stderr when ovs-vsctl fails. Without a running ovs-vswitchd, pass
// "--no-wait" before modifying commands or they wait for it until the timeout.
func (o *OVSDB) Vsctl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := testContext(t, cmdTimeout+5*time.Second)
	defer cancel()
	args = append([]string{"--timeout=" + strconv.Itoa(int(cmdTimeout/time.Second))}, args...)
	out, _, err := o.VsctlErr(ctx, args...)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	return out
}

// VsctlErr runs `ovs-vsctl --db=<Endpoint> args…` until it exits or ctx ends, and returns its
// trimmed stdout and stderr. err is non-nil when ovs-vsctl exits non-zero or is killed by ctx;
// it names the command and quotes stderr. Note that ovs-vsctl exits 0 when ovs-vswitchd
// rejects an interface: it only prints "Error detected while setting up 'X'" on stderr.
func (o *OVSDB) VsctlErr(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	return o.tools.Vsctl(ctx, args...)
}

// Get returns `ovs-vsctl get table record column` with one level of double quotes removed, so
// string values come back bare: Get(t, "Interface", "p1", "error") returns the message itself.
// Missing optional values come back as "[]". It fails the test when the record or column does
// not exist.
func (o *OVSDB) Get(t testing.TB, table, record, column string) string {
	t.Helper()
	out := o.Vsctl(t, "get", table, record, column)
	if unq, err := strconv.Unquote(out); err == nil && strings.HasPrefix(out, `"`) {
		return unq
	}
	return out
}
