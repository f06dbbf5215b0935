//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/test/lab"
)

// node is one node of the restart test: its own ovsplaned (own data dir and OVSDB) running the
// stripe plugin with one job.
type node struct {
	name, sock, apps string // job name, the daemon's API address, the job's unix socket
	daemon           *testkit.Proc
	metrics          string // the daemon's Prometheus address ("" without)
}

// startNode starts an ovsplaned for one node whose plugin binary is bin (copied into its own
// plugin dir, pinned by sum) and whose only stripe job is config.
func startNode(t *testing.T, name, bin, sum, config string, metrics bool) *node {
	t.Helper()
	db := lab.StartOVSDB(t)
	dir := testkit.ShortTempDir(t, "stripekill-")
	pluginDir := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginDir, "ovsplane-plugin-stripe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	n := &node{name: name, sock: "unix:" + filepath.Join(dir, "ovsplaned.sock"),
		apps: filepath.Join(dir, "plugin-data", "stripe", name+".sock")}
	extra := ""
	if metrics {
		n.metrics = testkit.FreeTCPAddr(t)
		extra = "metrics:\n  address: " + n.metrics + "\n"
	}
	yaml := fmt.Sprintf(`%splugin_dir: %s
plugins:
  - name: stripe
    path: ovsplane-plugin-stripe
    sha256: %s
    jobs:
      - name: %s
        type: stripe
        config: %s
`, extra, pluginDir, sum, name, config)
	conf := filepath.Join(dir, "ovsplaned.yaml")
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	n.daemon = testkit.Start(t, exec.Command(testkit.BuildOnce(t, ovsplanedPkg), "--config", conf, "--data-dir", dir,
		"--ovsdb-endpoints", db.Endpoint, "--log-level", "info"))
	t.Cleanup(func() {
		n.daemon.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("ovsplaned of %s (tail):\n%s", name, n.daemon.Out.Tail(8000))
		}
	})
	return n
}

// vsctl runs vsctl against n's daemon with --format json and decodes its output into v.
func (n *node) vsctl(ctx context.Context, v any, args ...string) error {
	var out, errOut bytes.Buffer
	rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: append([]string{"vsctl", "--daemon", n.sock, "--format", "json"}, args...),
		Stdout: &out, Stderr: &errOut})
	if rc != 0 && out.Len() == 0 {
		return fmt.Errorf("vsctl %s: exit %d: %s", strings.Join(args, " "), rc, errOut.String())
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return fmt.Errorf("vsctl %s: %v: %s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// pluginPID is the stripe plugin's process id and restart count as n's daemon reports them.
func (n *node) pluginPID(ctx context.Context) (pid, restarts int, err error) {
	var rows []struct {
		Name, State string
		Restarts    int
		PID         int `json:"pid"`
	}
	if err := n.vsctl(ctx, &rows, "plugin", "list"); err != nil {
		return 0, 0, err
	}
	for _, r := range rows {
		if r.Name == "stripe" && r.State == "running" {
			return r.PID, r.Restarts, nil
		}
	}
	return 0, 0, fmt.Errorf("plugin stripe not running: %+v", rows)
}

// job is n's job row of `vsctl plugin stats stripe`, once it runs and knows its peer.
func (n *node) job(ctx context.Context, peer string) (statsRow, error) {
	var rows []statsRow
	if err := n.vsctl(ctx, &rows, "plugin", "stats", "stripe"); err != nil {
		return statsRow{}, err
	}
	if len(rows) != 1 || rows[0].State != "running" {
		return statsRow{}, fmt.Errorf("jobs %+v", rows)
	}
	if v, ok := rows[0].value("stripe_peer_known", map[string]string{"peer": peer}); !ok || v != 1 {
		return statsRow{}, fmt.Errorf("job %s: peer %s not known yet", n.name, peer)
	}
	return rows[0], nil
}

// Messages of the restart test: the sender's incarnation (u32) and a counter (u64), padded.
const (
	killMsgSize = 4000
	service     = 11
	port1       = 100 // application a1 on node 1
	port2       = 200 // application a2 on node 2
)

// stream is what one application received: per incarnation of the sender, the count, and the
// first order error seen.
type stream struct {
	mu      sync.Mutex
	inc     uint32
	last    uint64
	started bool
	counts  map[uint32]int
	err     error
}

// add checks that a message (inc, n) comes after every message before it: a later
// incarnation, or the same one with a higher counter (nothing twice, nothing out of order).
func (s *stream) add(inc uint32, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[uint32]int{}
	}
	if s.started && (inc < s.inc || (inc == s.inc && n <= s.last)) && s.err == nil {
		s.err = fmt.Errorf("message %d of incarnation %d after message %d of incarnation %d: duplicate or out of order", n, inc, s.last, s.inc)
	}
	s.inc, s.last, s.started = inc, n, true
	s.counts[inc]++
}

// snapshot copies the counts per incarnation (for a log line while messages still arrive).
func (s *stream) snapshot() map[uint32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

func (s *stream) count(inc uint32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[inc]
}

func (s *stream) error() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// runApp registers application name on the endpoint at path and, until ctx ends or the
// connection breaks, sends numbered messages of incarnation inc (counting from *next) and
// checks what it receives into got. It returns why it stopped.
func runApp(ctx context.Context, path, name string, local uint16, peer uint32, peerPort uint16, inc uint32, next *atomic.Uint64, got *stream) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	cl := endpoint.NewClient(c, false)
	id, err := cl.Register(ctx, endpoint.Registration{Name: name, Service: service, LocalPort: local, PeerNode: peer, PeerPort: peerPort})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() {
		msg := make([]byte, killMsgSize)
		for ctx.Err() == nil {
			n := next.Add(1)
			binary.BigEndian.PutUint32(msg, inc)
			binary.BigEndian.PutUint64(msg[4:], n)
			if err := cl.Send(ctx, id, uint32(n), msg); err != nil {
				errc <- fmt.Errorf("send: %w", err)
				return
			}
		}
		errc <- ctx.Err()
	}()
	go func() {
		for {
			m, err := cl.Next(ctx)
			if err != nil {
				errc <- fmt.Errorf("receive: %w", err)
				return
			}
			if m.Type != endpoint.TypeDeliver || len(m.Payload) != killMsgSize {
				continue // an asynchronous error reply (a send refused while the peer was away)
			}
			got.add(binary.BigEndian.Uint32(m.Payload), binary.BigEndian.Uint64(m.Payload[4:]))
		}
	}()
	err = <-errc
	cancel()
	return err
}

// TestKillPluginMidTransfer: two nodes, each its own ovsplaned running the stripe plugin with
// one job, exchange numbered messages between an application on each (clients of the jobs'
// unix sockets) in both directions. Node 2's plugin process is killed with SIGKILL mid-transfer.
// Its daemon starts it again (a new PID, the restart counted) and the job again; node 2's
// application registers again and carries on. Node 1 sees a clean reset: its engine counts
// the reset (stripe_resets) and restarts its own connection at node 2's request
// (stripe_restarts); both applications receive the other's messages after the restart, and
// neither ever receives a message twice or out of order.
func TestKillPluginMidTransfer(t *testing.T) {
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	var linksA, linksB []string
	for range 4 {
		p := lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b})
		linksA, linksB = append(linksA, p.A.Name), append(linksB, p.B.Name)
	}
	binDir := testkit.ShortTempDir(t, "stripebin-")
	sum := testkit.InstallPlugin(t, ".", binDir, "ovsplane-plugin-stripe")
	bin := filepath.Join(binDir, "ovsplane-plugin-stripe")
	n1 := startNode(t, "node1", bin, sum, jobConfig(1, 2, a.Name, linksA), true)
	n2 := startNode(t, "node2", bin, sum, jobConfig(2, 1, b.Name, linksB), false)
	lab.WaitFor(t, time.Minute, "both jobs running and knowing their peer", func(ctx context.Context) error {
		for _, n := range []*node{n1, n2} {
			if n.daemon.Exited() {
				t.Fatalf("ovsplaned of %s exited", n.name)
			}
		}
		if _, err := n1.job(ctx, "2"); err != nil {
			return err
		}
		_, err := n2.job(ctx, "1")
		return err
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var at1, at2 stream // what a1 (node 1) and a2 (node 2) received
	var next1, next2 atomic.Uint64
	var inc2 atomic.Uint32 // a2's incarnation: 1 before the kill
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	a1err := make(chan error, 1)
	wg.Go(func() { a1err <- runApp(ctx, n1.apps, "a1", port1, 2, port2, 1, &next1, &at1) })
	wg.Go(func() {
		// a2 runs again whenever its connection breaks (its plugin died), as a new incarnation.
		for i := uint32(1); ctx.Err() == nil; {
			inc2.Store(i)
			err := runApp(ctx, n2.apps, "a2", port2, 1, port1, i, &next2, &at2)
			var ee *endpoint.Error
			switch {
			case ctx.Err() != nil:
				return
			case errors.As(err, &ee), errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
				// Not up yet (no socket, or the endpoint starting): try again.
			case err != nil:
				i++ // the connection broke: the next registration is a new incarnation
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	lab.WaitFor(t, time.Minute, "both applications receiving", func(context.Context) error {
		if at1.count(1) < 50 || at2.count(1) < 50 {
			return fmt.Errorf("a1 received %d, a2 %d messages", at1.count(1), at2.count(1))
		}
		return nil
	})
	pid, restarts, err := n2.pluginPID(ctx)
	if err != nil || pid <= 0 {
		t.Fatalf("node 2's plugin: pid %d, %v", pid, err)
	}
	before, err := n1.job(ctx, "2")
	if err != nil {
		t.Fatal(err)
	}
	resets0, _ := before.value("stripe_resets", map[string]string{"peer": "2"})
	restarts0, _ := before.value("stripe_restarts", map[string]string{"peer": "2"})
	t.Logf("killing node 2's plugin, pid %d, mid-transfer (a1 received %d messages, a2 %d)", pid, at1.count(1), at2.count(1))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The dead connection may still hand a2 what its socket buffer held: count beyond that.
	killed2 := at2.count(1) + 100
	var after statsRow
	last := ""
	lab.WaitFor(t, 2*time.Minute, "node 2's plugin restarted, a2 registered again and both directions flowing", func(ctx context.Context) (err error) {
		defer func() {
			if err != nil && err.Error() != last {
				last = err.Error()
				t.Logf("waiting: %v", err)
			}
		}()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := errors.Join(at1.error(), at2.error()); err != nil {
			t.Fatal(err)
		}
		p, r, err := n2.pluginPID(ctx)
		if err != nil {
			return err
		}
		if p == pid || r <= restarts {
			return fmt.Errorf("node 2's plugin: pid %d (was %d), %d restarts (was %d)", p, pid, r, restarts)
		}
		inc := inc2.Load()
		if inc < 2 || at1.count(inc) < 50 {
			return fmt.Errorf("a2 incarnation %d: a1 received %d of its messages", inc, at1.count(inc))
		}
		// a2's new incarnation receives a1's messages (node 1 restarted its connection).
		if n := at2.count(1); n < killed2 {
			return fmt.Errorf("a2 received %d messages, want more than %d", n, killed2)
		}
		if after, err = n1.job(ctx, "2"); err != nil {
			return err
		}
		if v, _ := after.value("stripe_restarts", map[string]string{"peer": "2"}); v <= restarts0 {
			return fmt.Errorf("node 1: stripe_restarts %v (was %v)", v, restarts0)
		}
		// The stats are sampled: a sample may show the restart of node 1's connection and not
		// yet the reset of node 2's, which arrived at about the same time (a1 has its messages).
		if v, _ := after.value("stripe_resets", map[string]string{"peer": "2"}); v <= resets0 {
			return fmt.Errorf("node 1: stripe_resets %v (was %v) in the last sample", v, resets0)
		}
		return nil
	})
	// a1 keeps receiving a2's messages and a2 a1's, well after the restart.
	mark1, mark2 := at1.count(inc2.Load()), at2.count(1)
	lab.WaitFor(t, time.Minute, "both directions still flowing", func(context.Context) error {
		if at1.count(inc2.Load()) < mark1+50 || at2.count(1) < mark2+50 {
			return fmt.Errorf("a1 %d (from %d), a2 %d (from %d)", at1.count(inc2.Load()), mark1, at2.count(1), mark2)
		}
		return nil
	})
	if err := errors.Join(at1.error(), at2.error()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a1err:
		t.Fatalf("a1 stopped: %v", err)
	default:
	}
	resets, _ := after.value("stripe_resets", map[string]string{"peer": "2"})
	if resets <= resets0 {
		t.Errorf("node 1: stripe_resets %v (was %v): the restart went unseen", resets, resets0)
	}
	if v, _ := after.value("stripe_duplicates", map[string]string{"peer": "2"}); v != 0 {
		t.Logf("node 1: %v duplicate frames dropped by the reorder buffer", v)
	}
	t.Logf("node 1 after the kill: stripe_resets %v, stripe_restarts > %v; a1 received %v messages per incarnation of a2, a2 received %d",
		resets, restarts0, at1.snapshot(), at2.count(1))

	// vsctl's text form and --top show the application.
	var out, errOut bytes.Buffer
	if rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: []string{"vsctl", "--daemon", n1.sock, "plugin", "stats", "stripe"},
		Stdout: &out, Stderr: &errOut}); rc != 0 {
		t.Fatalf("vsctl plugin stats stripe: exit %d: %s", rc, errOut.String())
	}
	for _, want := range []string{`stripe_app_share_bytes_per_second{app="a1",peer="2"}`, `stripe_app_pacing_drops{app="a1",peer="2"}`, `stripe_resets{peer="2"}`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("vsctl plugin stats stripe lacks %s:\n%s", want, out.String())
		}
	}
	out.Reset()
	if rc := runCLI([]string{"--top", "--once", "--daemon", n1.sock}, &out, &errOut); rc != 0 {
		t.Fatalf("--top --once: exit %d: %s", rc, errOut.String())
	}
	t.Logf("--top --once on node 1:\n%s", out.String())
	for _, want := range []string{"APP", "  a1  ", "fair share"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--top --once lacks %q", want)
		}
	}

	// The per-application metrics reach Prometheus through the daemon's job metrics.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n1.metrics+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`ovsplane_job_stripe_app_share_bytes_per_second{app="a1"`, `ovsplane_job_stripe_resets_total{`, `ovsplane_job_stripe_app_sent_bytes_total{app="a1"`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
