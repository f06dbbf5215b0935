//go:build linux

package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// The tests in this file drive package ovsdb over the network endpoint kinds: tcp:, ssl: (mutual
// TLS with certificates made by the test) and the three tcp: members of a Raft-clustered
// database that loses its leader. lab.StartOVSDB serves a unix socket only, so these tests start
// their own ovsdb-servers, as children of the test binary in private temporary directories.

// portAttempts bounds how often a server is restarted on fresh ports when one of the ports picked
// for it was taken by another process between the pick and ovsdb-server's bind.
const portAttempts = 5

// serverStartTimeout bounds how long a server, or the whole cluster, may take to come up.
const serverStartTimeout = 30 * time.Second

var (
	// errPortBusy: ovsdb-server could not bind a port picked for it.
	errPortBusy = errors.New("port taken by another process")
	// errServerDied: ovsdb-server exited while the test waited for it.
	errServerDied = errors.New("ovsdb-server exited")
)

// TestTCPEndpoint commits through a tcp: endpoint and checks the result with ovs-vsctl over TCP.
func TestTCPEndpoint(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	dir := tempDir(t)
	db := createDB(t, dir)
	port, srv := startOnFreePort(t, dir, "tcp", func(port int) []string {
		return []string{db, fmt.Sprintf("--remote=ptcp:%d:127.0.0.1", port)}
	})
	ep := fmt.Sprintf("tcp:127.0.0.1:%d", port)

	dialAndCommitP1(t, ovsdb.Config{Endpoints: []string{ep}})
	if got := vsctl(t, srv.env(), "--db="+ep, "list-ports", "br0"); got != "p1" {
		t.Errorf("ovs-vsctl --db=%s list-ports br0 = %q, want p1", ep, got)
	}
}

// TestSSLEndpoint commits through an ssl: endpoint with mutual TLS (certificates made here by a
// test CA), checks the result with ovs-vsctl over SSL, and checks that a client with a
// certificate from another CA is refused by the server, and that a client which does not trust
// the server's CA refuses the server.
func TestSSLEndpoint(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	l := startSSLServer(t)
	ep, srv, client, caPath, roguePath, rogueClient := l.ep, l.srv, l.client, l.caPath, l.roguePath, l.rogueClient
	c := dialAndCommitP1(t, ovsdb.Config{Endpoints: []string{ep},
		TLS: &ovsdb.TLSFiles{PrivateKey: client.key, Certificate: client.cert, CACert: caPath}})
	if got := vsctl(t, srv.env(), "--db="+ep, "-p", client.key, "-c", client.cert, "-C", caPath,
		"list-ports", "br0"); got != "p1" {
		t.Errorf("ovs-vsctl --db=%s list-ports br0 = %q, want p1", ep, got)
	}

	// A certificate signed by another CA: the server refuses the client.
	_, err := dialOnce(timeout(t, 5*time.Second), ovsdb.Config{Endpoints: []string{ep},
		TLS: &ovsdb.TLSFiles{PrivateKey: rogueClient.key, Certificate: rogueClient.cert, CACert: caPath}})
	t.Logf("client certificate from another CA: %v", err)
	checkRefused(t, "client certificate from another CA", err)

	// The client trusts only another CA: it refuses the server's certificate.
	_, err = dialOnce(timeout(t, 5*time.Second), ovsdb.Config{Endpoints: []string{ep},
		TLS: &ovsdb.TLSFiles{PrivateKey: client.key, Certificate: client.cert, CACert: roguePath}})
	t.Logf("server certificate from an untrusted CA: %v", err)
	checkRefused(t, "server certificate from an untrusted CA", err)
	var unknownCA x509.UnknownAuthorityError
	if err != nil && !errors.As(err, &unknownCA) {
		t.Errorf("server certificate from an untrusted CA: err = %v, want an x509.UnknownAuthorityError", err)
	}

	// The refused connections left the server serving the good client.
	if _, err := c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p2"}}).
		Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{NoWait: true}); err != nil {
		t.Fatalf("commit after the refused connections: %v", err)
	}
	if got := vsctl(t, srv.env(), "--db="+ep, "-p", client.key, "-c", client.cert, "-C", caPath,
		"list-ports", "br0"); got != "p1\np2" {
		t.Errorf("ovs-vsctl list-ports br0 = %q, want p1 and p2", got)
	}
}

// dialAndCommitP1 dials cfg's one endpoint, checks that the client says it is connected there,
// initialises it and commits bridge br0 with port p1.
func dialAndCommitP1(t *testing.T, cfg ovsdb.Config) *ovsdb.Client {
	t.Helper()
	ep := cfg.Endpoints[0]
	c := dialConfig(t, cfg)
	if got := c.Endpoint(); got != ep {
		t.Errorf("Endpoint() = %q, want %q", got, ep)
	}
	if err := c.Init(timeout(t, 30*time.Second)); err != nil {
		t.Fatalf("Init over %s: %v", ep, err)
	}
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}).
		Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{NoWait: true}); err != nil {
		t.Fatalf("commit over %s: %v", ep, err)
	}
	return c
}

// sslLab is a standalone ovsdb-server on an ssl: remote with mutual TLS: certificates from a
// test CA for the server and a client, and a rogue CA with a client certificate of its own.
type sslLab struct {
	ep          string // ssl:127.0.0.1:PORT
	srv         *server
	caPath      string // the test CA's certificate
	client      pemPair
	roguePath   string // the rogue CA's certificate
	rogueClient pemPair
}

// startSSLServer makes the certificates and starts the server of an sslLab.
func startSSLServer(t *testing.T) *sslLab {
	t.Helper()
	dir := tempDir(t)
	db := createDB(t, dir)
	ca := newTestCA(t, "ovsplane test CA")
	l := &sslLab{caPath: ca.writeCert(t, dir, "ca")}
	server := ca.issue(t, dir, "server")
	l.client = ca.issue(t, dir, "client")
	rogue := newTestCA(t, "rogue CA")
	l.roguePath = rogue.writeCert(t, dir, "rogue-ca")
	l.rogueClient = rogue.issue(t, dir, "rogue-client")
	var port int
	port, l.srv = startOnFreePort(t, dir, "ssl", func(port int) []string {
		return []string{db, fmt.Sprintf("--remote=pssl:%d:127.0.0.1", port),
			"--private-key=" + server.key, "--certificate=" + server.cert, "--ca-cert=" + l.caPath}
	})
	l.ep = fmt.Sprintf("ssl:127.0.0.1:%d", port)
	return l
}

// checkRefused asserts that a Dial failed because the TLS peer was refused, not because the
// context ran out.
func checkRefused(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: Dial succeeded, want an error", what)
	case !errors.Is(err, ovsdb.ErrNotConnected):
		t.Errorf("%s: err = %v, want one matching ovsdb.ErrNotConnected", what, err)
	case errors.Is(err, context.DeadlineExceeded):
		t.Errorf("%s: Dial ran out of time instead of being refused: %v", what, err)
	}
}

// TestClusterLeaderFailover runs a three-member Raft cluster, commits through the client given
// all three members, kills the leader the client is connected to, and commits again: the client
// must find the new leader by itself, and both commits must be in the surviving members.
func TestClusterLeaderFailover(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	members := startCluster(t)
	eps := make([]string, len(members))
	for i, m := range members {
		eps[i] = m.endpoint
	}

	// The database is initialised by ovs-vsctl (leader-only by default), so that this test is
	// about failover alone; Client.Init is covered over tcp: and ssl:.
	vsctl(t, members[0].env(), "--db="+strings.Join(eps, ","), "--no-wait", "init")
	c := dialConfig(t, ovsdb.Config{Endpoints: eps}) // LeaderOnly defaults to true
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}).
		Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{NoWait: true}); err != nil {
		t.Fatalf("commit on the cluster: %v", err)
	}

	var old *member
	lab.WaitFor(t, 30*time.Second, "the client to be connected to the leader", func(ctx context.Context) error {
		l, err := leaderOf(ctx, members)
		if err != nil {
			return err
		}
		if got := c.Endpoint(); got != l.endpoint {
			return fmt.Errorf("client on %q, leader is %s (%s)", got, l.name, l.endpoint)
		}
		old = l
		return nil
	})
	t.Logf("client connected to %s, the leader (%s); killing it", old.endpoint, old.name)
	old.kill()
	var survivors []*member
	var survivorEps []string
	for _, m := range members {
		if m != old {
			survivors = append(survivors, m)
			survivorEps = append(survivorEps, m.endpoint)
		}
	}

	res, err := c.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p2"}}).
		Commit(timeout(t, 60*time.Second), ovsdb.CommitOptions{NoWait: true})
	if err != nil {
		t.Fatalf("commit after killing the leader %s: %v", old.endpoint, err)
	}
	now := c.Endpoint()
	t.Logf("commit after the failover: %d attempt(s); client moved from %s to %q", res.Attempts, old.endpoint, now)
	if now == old.endpoint {
		t.Errorf("client still reports the killed leader's endpoint %s", now)
	}
	lab.WaitFor(t, 30*time.Second, "the client to be connected to the new leader", func(ctx context.Context) error {
		l, err := leaderOf(ctx, survivors)
		if err != nil {
			return err
		}
		if got := c.Endpoint(); got != l.endpoint {
			return fmt.Errorf("client on %q, leader is %s (%s)", got, l.name, l.endpoint)
		}
		return nil
	})

	db := "--db=" + strings.Join(survivorEps, ",")
	if got := vsctl(t, survivors[0].env(), db, "list-ports", "br0"); got != "p1\np2" {
		t.Errorf("ovs-vsctl %s list-ports br0 = %q, want p1 and p2", db, got)
	}
}

// member is one ovsdb-server of the cluster.
type member struct {
	*server
	endpoint string // client endpoint, tcp:127.0.0.1:PORT
	raft     string // Raft address, tcp:127.0.0.1:PORT
}

// startCluster creates a three-member clustered Open_vSwitch database on 127.0.0.1, starts its
// servers and waits until every one is a cluster member and one of them is the leader. Ports
// taken by another process meanwhile make it start over on fresh ports.
func startCluster(t *testing.T) []*member {
	t.Helper()
	root := tempDir(t)
	for attempt := 1; ; attempt++ {
		members, err := tryCluster(t, filepath.Join(root, "try"+strconv.Itoa(attempt)))
		if err == nil {
			for _, m := range members {
				t.Logf("cluster member %s: pid %d, client %s, raft %s", m.name, m.cmd.Process.Pid, m.endpoint, m.raft)
			}
			return members
		}
		for _, m := range members {
			m.kill()
		}
		if errors.Is(err, errPortBusy) && attempt < portAttempts {
			t.Logf("starting the cluster again on other ports: %v", err)
			continue
		}
		t.Fatalf("starting the cluster: %v", err)
	}
}

// tryCluster is one attempt of startCluster in dir. It returns the members it started, even
// with an error.
func tryCluster(t *testing.T, dir string) ([]*member, error) {
	t.Helper()
	ports := freePorts(t, 6)
	var members []*member
	for i := range 3 {
		mdir := filepath.Join(dir, "s"+strconv.Itoa(i+1))
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			t.Fatal(err)
		}
		members = append(members, &member{
			server:   &server{name: "s" + strconv.Itoa(i+1), dir: mdir},
			endpoint: fmt.Sprintf("tcp:127.0.0.1:%d", ports[i]),
			raft:     fmt.Sprintf("tcp:127.0.0.1:%d", ports[3+i]),
		})
	}
	ctx := timeout(t, serverStartTimeout)
	for i, m := range members {
		dbPath := filepath.Join(m.dir, "conf.db")
		var err error
		if i == 0 {
			_, err = runOVS(ctx, m.env(), "ovsdb-tool", "create-cluster", dbPath, lab.SchemaPath, m.raft)
		} else {
			args := []string{"join-cluster", dbPath, "Open_vSwitch", m.raft}
			for _, o := range members[:i] {
				args = append(args, o.raft)
			}
			_, err = runOVS(ctx, m.env(), "ovsdb-tool", args...)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range members {
		m.start(t, filepath.Join(m.dir, "conf.db"), fmt.Sprintf("--remote=ptcp:%d:127.0.0.1", ports[i]))
	}
	err := poll(ctx, func(ctx context.Context) error {
		for _, m := range members {
			if err := m.alive(); err != nil {
				return err
			}
		}
		for _, m := range members {
			status, _, err := m.clusterStatus(ctx)
			if err != nil {
				return err
			}
			if status != "cluster member" {
				return fmt.Errorf("%s: status %q", m.name, status)
			}
			if err := dialTCP(ctx, strings.TrimPrefix(m.endpoint, "tcp:")); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		_, err := leaderOf(ctx, members)
		return err
	})
	return members, err
}

// leaderOf returns the member whose cluster/status says it is the leader. It fails unless
// exactly one of members is.
func leaderOf(ctx context.Context, members []*member) (*member, error) {
	var leaders []*member
	for _, m := range members {
		_, role, err := m.clusterStatus(ctx)
		if err != nil {
			return nil, err
		}
		if role == "leader" {
			leaders = append(leaders, m)
		}
	}
	if len(leaders) != 1 {
		return nil, fmt.Errorf("%d leaders among %d members", len(leaders), len(members))
	}
	return leaders[0], nil
}

// clusterStatus returns the Status and Role lines of `ovs-appctl cluster/status Open_vSwitch`.
func (m *member) clusterStatus(ctx context.Context) (status, role string, err error) {
	out, err := runOVS(ctx, m.env(), "ovs-appctl", "-t", m.ctl(), "cluster/status", "Open_vSwitch")
	if err != nil {
		return "", "", err
	}
	for line := range strings.Lines(out) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		switch k {
		case "Status":
			status = v
		case "Role":
			role = v
		}
	}
	return status, role, nil
}

// server is an ovsdb-server child process of the test binary, with its control socket, pid file
// and logs in its private directory dir (also its OVS_RUNDIR, OVS_LOGDIR and OVS_DBDIR).
type server struct {
	name string
	dir  string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's result, set before done is closed
}

func (s *server) env() []string {
	return []string{"OVS_RUNDIR=" + s.dir, "OVS_LOGDIR=" + s.dir, "OVS_DBDIR=" + s.dir}
}

func (s *server) ctl() string     { return filepath.Join(s.dir, s.name+".ctl") }
func (s *server) logPath() string { return filepath.Join(s.dir, s.name+".log") }

// start runs `ovsdb-server args…` with the server's control socket, pid file and log file. The
// process is killed at cleanup, and by the kernel if the test binary dies first.
func (s *server) start(t *testing.T, args ...string) {
	t.Helper()
	out, err := os.Create(filepath.Join(s.dir, s.name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command("ovsdb-server", slices.Concat(args, []string{
		"--unixctl=" + s.ctl(),
		"--pidfile=" + filepath.Join(s.dir, s.name+".pid"),
		"--log-file=" + s.logPath(),
		"-vconsole:warn",
	})...)
	cmd.Env = append(os.Environ(), s.env()...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ovsdb-server %s: %v", s.name, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("tail of %s:\n%s", s.logPath(), lastLines(s.logPath(), 30))
		}
	})
}

// kill sends SIGKILL and waits for the process to exit. Killing a dead server does nothing.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// alive returns an error matching errServerDied when the process has exited and one matching
// errPortBusy when it could not bind a port.
func (s *server) alive() error {
	select {
	case <-s.done:
		return fmt.Errorf("%w: %s: %v\n%s", errServerDied, s.name, s.err, lastLines(s.logPath(), 10))
	default:
	}
	data, _ := os.ReadFile(s.logPath())
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, "Address already in use") {
			return fmt.Errorf("%w: %s: %s", errPortBusy, s.name, strings.TrimSpace(line))
		}
	}
	return nil
}

// startOnFreePort starts ovsdb-server with the arguments args(port) for a free TCP port of
// 127.0.0.1 and waits until it accepts connections there; when the port was taken meanwhile it
// tries again with another.
func startOnFreePort(t *testing.T, dir, name string, args func(port int) []string) (int, *server) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := freePorts(t, 1)[0]
		s := &server{name: name + strconv.Itoa(attempt), dir: dir}
		s.start(t, args(port)...)
		err := poll(timeout(t, serverStartTimeout), func(ctx context.Context) error {
			if err := s.alive(); err != nil {
				return err
			}
			// Once the control socket answers, ovsdb-server has tried to bind its remotes.
			if _, err := runOVS(ctx, s.env(), "ovs-appctl", "-t", s.ctl(), "version"); err != nil {
				return err
			}
			if err := s.alive(); err != nil {
				return err
			}
			return dialTCP(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		})
		if err == nil {
			t.Logf("ovsdb-server %s: pid %d listening on 127.0.0.1:%d", s.name, s.cmd.Process.Pid, port)
			return port, s
		}
		s.kill()
		if errors.Is(err, errPortBusy) && attempt < portAttempts {
			t.Logf("starting ovsdb-server again on another port: %v", err)
			continue
		}
		t.Fatalf("starting ovsdb-server %s: %v", s.name, err)
	}
}

// poll calls cond every 100 ms until it returns nil or an error matching errPortBusy or
// errServerDied, or ctx ends.
func poll(ctx context.Context, cond func(ctx context.Context) error) error {
	for {
		err := cond(ctx)
		if err == nil || errors.Is(err, errPortBusy) || errors.Is(err, errServerDied) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePorts returns n distinct TCP ports of 127.0.0.1 that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("picking a free port: %v", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func dialTCP(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// tempDir makes a short private directory (unix socket paths are limited to 107 bytes), removed
// at cleanup after the servers in it are stopped.
func tempDir(t *testing.T) string {
	t.Helper()
	return testkit.ShortTempDir(t, "ovlep-")
}

// createDB creates a standalone Open_vSwitch database in dir and returns its path.
func createDB(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "conf.db")
	if _, err := runOVS(timeout(t, 30*time.Second), nil, "ovsdb-tool", "create", path, lab.SchemaPath); err != nil {
		t.Fatal(err)
	}
	return path
}

// dialConfig dials cfg (with a warning-level logger) and closes the client at cleanup.
func dialConfig(t *testing.T, cfg ovsdb.Config) *ovsdb.Client {
	t.Helper()
	c, err := dialOnce(timeout(t, 30*time.Second), cfg)
	if err != nil {
		t.Fatalf("Dial %v: %v", cfg.Endpoints, err)
	}
	t.Cleanup(c.Close)
	return c
}

func dialOnce(ctx context.Context, cfg ovsdb.Config) (*ovsdb.Client, error) {
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return ovsdb.Dial(ctx, cfg)
}

// vsctl runs `ovs-vsctl --timeout=30 args…` and returns its trimmed stdout, failing the test
// when it fails.
func vsctl(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := runOVS(timeout(t, 40*time.Second), env, "ovs-vsctl", append([]string{"--timeout=30"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runOVS runs an OVS tool with env added to the environment and returns its trimmed stdout; the
// error quotes the command line and stderr.
func runOVS(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// lastLines returns the last n lines of the file at path, or why it cannot.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// testCA is a certificate authority made for one test.
type testCA struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
}

// pemPair names the PEM files of a private key and its certificate.
type pemPair struct{ key, cert string }

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := certTemplate(t, name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("creating CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{key: key, cert: cert}
}

// writeCert writes the CA's certificate to dir/name.crt and returns the path.
func (ca *testCA) writeCert(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name+".crt")
	writePEM(t, path, "CERTIFICATE", ca.cert.Raw)
	return path
}

// issue makes a key and a certificate signed by the CA, usable by both TLS clients and servers,
// and writes them to dir/name.key and dir/name.crt.
func (ca *testCA) issue(t *testing.T, dir, name string) pemPair {
	t.Helper()
	key := newKey(t)
	tmpl := certTemplate(t, name)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("creating certificate %s: %v", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := pemPair{key: filepath.Join(dir, name+".key"), cert: filepath.Join(dir, name+".crt")}
	writePEM(t, p.key, "PRIVATE KEY", keyDER)
	writePEM(t, p.cert, "CERTIFICATE", der)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func certTemplate(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"ovsplane tests"}, CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
