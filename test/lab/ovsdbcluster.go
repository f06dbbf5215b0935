//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// clusterFormTimeout bounds how long a fresh 3-member cluster may take to elect a leader and
// see all its members.
const clusterFormTimeout = 20 * time.Second

// ClusterSize is the number of members StartOVSDBCluster starts.
const ClusterSize = 3

// OVSDBCluster is a private clustered (Raft) ovsdb-server of ClusterSize members, all children
// of the test binary, sharing one temporary directory. Member i lives in Dir/m<i>.
type OVSDBCluster struct {
	// Dir is the directory holding every member's files. Removed at cleanup.
	Dir string
	// DBName is the database name from the schema ("Overlay_Fabric"…).
	DBName string
	// Members are the servers, in creation order (member 0 created the cluster).
	Members []*ClusterMember
}

// ClusterMember is one server of an OVSDBCluster.
type ClusterMember struct {
	// Index is the member's position in OVSDBCluster.Members.
	Index int
	// Dir holds the member's database, sockets, pidfile and log.
	Dir string
	// DBPath is the member's clustered database file.
	DBPath string
	// Sock is the client socket; Endpoint is "unix:"+Sock.
	Sock, Endpoint string
	// RaftAddr is the member's Raft address ("unix:<Dir>/raft.sock").
	RaftAddr string
	// CtlPath is the unixctl socket (ovs-appctl -t); LogPath its --log-file.
	CtlPath, LogPath string

	dbName string
	d      *ovsproc.Daemon
	killed atomic.Int64 // pid of the process Kill ended on purpose
}

// StartOVSDBCluster creates a 3-member clustered database from schemaPath in a new temporary
// directory (ovsdb-tool create-cluster on member 0, join-cluster on members 1 and 2), starts the
// three ovsdb-servers and waits until every member reports itself a cluster member seeing 3
// servers and one of them is the leader. At cleanup it stops every member, logs the tails of
// their logs when the test failed, and removes the directory. It calls Require(t, NeedOVS) and
// fails the test on any other error.
func StartOVSDBCluster(t testing.TB, schemaPath string) *OVSDBCluster {
	t.Helper()
	Require(t, NeedOVS)
	sweep(t)
	// Not t.TempDir(): its paths can exceed the 107-byte limit of unix socket paths.
	dir, err := os.MkdirTemp("", dirPrefix+ownerTag(os.Getpid())+"-")
	if err != nil {
		t.Fatalf("lab: create cluster directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if schemaPath, err = filepath.Abs(schemaPath); err != nil {
		t.Fatalf("lab: schema path: %v", err)
	}
	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	name, _, err := ovsproc.Run(ctx, nil, "ovsdb-tool", "schema-name", schemaPath)
	if err != nil {
		t.Fatalf("lab: read schema name of %s: %v", schemaPath, err)
	}
	c := &OVSDBCluster{Dir: dir, DBName: strings.TrimSpace(name)}
	for i := range ClusterSize {
		m := newClusterMember(dir, i, c.DBName)
		if err := os.Mkdir(m.Dir, 0o700); err != nil {
			t.Fatalf("lab: create member directory: %v", err)
		}
		c.Members = append(c.Members, m)
	}
	t.Cleanup(func() { c.cleanup(t) })

	m0 := c.Members[0]
	if _, _, err := ovsproc.Run(ctx, nil, "ovsdb-tool", "create-cluster", m0.DBPath, schemaPath, m0.RaftAddr); err != nil {
		t.Fatalf("lab: create-cluster %s: %v", m0.DBPath, err)
	}
	for _, m := range c.Members[1:] {
		if _, _, err := ovsproc.Run(ctx, nil, "ovsdb-tool", "join-cluster", m.DBPath, c.DBName, m.RaftAddr, m0.RaftAddr); err != nil {
			t.Fatalf("lab: join-cluster %s: %v", m.DBPath, err)
		}
	}
	for _, m := range c.Members {
		m.Start(t)
	}
	WaitFor(t, clusterFormTimeout, "the cluster to form with a leader and 3 members", func(ctx context.Context) error {
		_, err := c.leader(ctx, ClusterSize)
		return err
	})
	t.Logf("lab: OVSDB cluster %s of %d members in %s", c.DBName, ClusterSize, dir)
	return c
}

// newClusterMember lays out member i's files in dir/m<i>.
func newClusterMember(dir string, i int, dbName string) *ClusterMember {
	mdir := filepath.Join(dir, "m"+strconv.Itoa(i))
	layout := ovsproc.Layout{Dir: mdir}
	spec := layout.OVSDBServer()
	spec.Argv = []string{"ovsdb-server", layout.DBPath(),
		"--remote=punix:" + layout.Sock(),
		"--pidfile=" + spec.Pidfile, "--unixctl=" + spec.Ctl, "--log-file=" + spec.Log,
		"-vconsole:warn"}
	return &ClusterMember{
		Index: i, Dir: mdir, DBPath: layout.DBPath(), Sock: layout.Sock(), Endpoint: layout.Endpoint(),
		RaftAddr: "unix:" + filepath.Join(mdir, "raft.sock"), CtlPath: spec.Ctl, LogPath: spec.Log,
		dbName: dbName, d: ovsproc.NewDaemon(spec),
	}
}

// Endpoints returns every member's client endpoint, in member order.
func (c *OVSDBCluster) Endpoints() []string {
	eps := make([]string, len(c.Members))
	for i, m := range c.Members {
		eps[i] = m.Endpoint
	}
	return eps
}

// Leader waits until a running member reports itself leader of a cluster in which it sees at
// least minServers servers, and returns it; it fails the test after timeout.
func (c *OVSDBCluster) Leader(t testing.TB, timeout time.Duration, minServers int) *ClusterMember {
	t.Helper()
	var leader *ClusterMember
	WaitFor(t, timeout, "a cluster leader", func(ctx context.Context) error {
		m, err := c.leader(ctx, minServers)
		leader = m
		return err
	})
	return leader
}

// leader returns the running member that is leader, checking that every running member is a
// cluster member seeing at least minServers servers.
func (c *OVSDBCluster) leader(ctx context.Context, minServers int) (*ClusterMember, error) {
	var leader *ClusterMember
	for _, m := range c.Members {
		if m.d.Running() == nil {
			continue
		}
		st, err := m.Status(ctx)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(st, "Status: cluster member") {
			return nil, fmt.Errorf("member %d is not yet a cluster member:\n%s", m.Index, st)
		}
		if n := countServers(st); n < minServers {
			return nil, fmt.Errorf("member %d sees %d servers, want %d", m.Index, n, minServers)
		}
		if strings.Contains(st, "Role: leader") {
			leader = m
		}
	}
	if leader == nil {
		return nil, fmt.Errorf("no running member is leader")
	}
	return leader, nil
}

// countServers counts the entries of the "Servers:" section of cluster/status output.
func countServers(status string) int {
	n, in := 0, false
	for line := range strings.Lines(status) {
		switch {
		case strings.HasPrefix(line, "Servers:"):
			in = true
		case in && strings.HasPrefix(line, "    "):
			n++
		case in:
			return n
		}
	}
	return n
}

// Status returns `ovs-appctl cluster/status <db>` of the member.
func (m *ClusterMember) Status(ctx context.Context) (string, error) {
	out, _, err := ovsproc.Run(ctx, nil, "ovs-appctl", "-t", m.CtlPath, "cluster/status", m.dbName)
	if err != nil {
		return "", fmt.Errorf("cluster/status of member %d: %w", m.Index, err)
	}
	return out, nil
}

// PID returns the member's ovsdb-server process id, or 0 when it is stopped.
func (m *ClusterMember) PID() int { return m.d.Running().PID() }

// Start starts the member's ovsdb-server on its existing database and waits until its client
// socket accepts connections (not until it has rejoined the cluster: see Leader). It fails the
// test when the member already runs or does not come up.
func (m *ClusterMember) Start(t testing.TB) {
	t.Helper()
	p, err := m.d.Start()
	if err != nil {
		t.Fatalf("lab: member %d: %v", m.Index, err)
	}
	ctx, cancel := testContext(t, ovsdbStartTimeout)
	defer cancel()
	ctx, stopWatch := p.Watch(ctx)
	defer stopWatch()
	if err := ovsproc.WaitSocket(ctx, m.Sock); err != nil {
		_ = p.Stop(context.Background(), nil)
		t.Fatalf("lab: member %d: %v", m.Index, p.Report(fmt.Errorf("waiting for %s: %w", m.Sock, err)))
	}
}

// Stop stops the member (SIGTERM, then SIGKILL after 5 s) and waits for it to exit; its
// database file is kept, so Start makes it rejoin.
func (m *ClusterMember) Stop(t testing.TB) {
	t.Helper()
	if err := m.d.Stop(context.Background(), nil); err != nil {
		t.Logf("lab: member %d: %v", m.Index, err)
	}
}

// Kill sends SIGKILL to the member and waits for it to exit, as a crash would end it. Killing
// a stopped member does nothing.
func (m *ClusterMember) Kill(t testing.TB) {
	t.Helper()
	p := m.d.Running()
	if p == nil {
		return
	}
	m.killed.Store(int64(p.PID()))
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatalf("lab: kill member %d (pid %d): %v", m.Index, p.PID(), err)
	}
	ctx, cancel := testContext(t, ovsdbStartTimeout)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("lab: member %d (pid %d) survived SIGKILL: %v", m.Index, p.PID(), err)
	}
}

// cleanup stops every member, reporting unexpected deaths and, when the test failed, the
// tails of the logs.
func (c *OVSDBCluster) cleanup(t testing.TB) {
	for _, m := range c.Members {
		if p := m.d.Current(); p != nil && p.Exited() && !p.StoppedOnPurpose() && int64(p.PID()) != m.killed.Load() {
			t.Logf("lab: member %d died during the test: %v", m.Index, p.Err())
		}
		m.Stop(t)
		if t.Failed() {
			t.Logf("lab: tail of %s:\n%s", m.LogPath, ovsproc.Tail(m.LogPath, 30))
		}
	}
}
