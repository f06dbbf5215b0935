//go:build linux

package stripeplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/test/lab"
)

// rates are the four links' capacities in Mbit/s, as in the engine's testbed.
var rates = []int{100, 200, 300, 400}

// testbed is two namespaces joined by four veth pairs, each end shaped with tbf at its rate.
type testbed struct {
	a, b  *lab.Netns
	pairs []*lab.VethPair
}

func newTestbed(t *testing.T) *testbed {
	t.Helper()
	tb := &testbed{a: lab.NewNetns(t), b: lab.NewNetns(t)}
	for _, mbit := range rates {
		p := lab.NewVethPair(t, lab.VethSpec{ANetns: tb.a, BNetns: tb.b})
		// burst ≥ one 64 KiB offload segment and ≈ 20 ms at the rate; 20 ms of queue.
		burst := max(64<<10, mbit*1e6/8/50)
		for _, end := range []lab.VethEnd{p.A, p.B} {
			end.Netns.Run(t, "tc", "qdisc", "replace", "dev", end.Name, "root", "tbf",
				"rate", strconv.Itoa(mbit)+"mbit", "burst", strconv.Itoa(burst), "latency", "20ms")
		}
		tb.pairs = append(tb.pairs, p)
	}
	return tb
}

// config is the stripe job configuration of one side.
func (tb *testbed) config(t *testing.T, aSide bool, policy string) []byte {
	t.Helper()
	c := Config{Node: 1, Peers: []PeerConfig{{Node: 2}}, Policy: policy, Netns: tb.a.Name}
	if !aSide {
		c = Config{Node: 2, Peers: []PeerConfig{{Node: 1}}, Policy: policy, Netns: tb.b.Name}
	}
	for i, p := range tb.pairs {
		name := p.A.Name
		if !aSide {
			name = p.B.Name
		}
		c.Links = append(c.Links, LinkConfig{Interface: name, CapacityMbit: float64(rates[i])})
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// side is one node: the plugin in a fake daemon.
type side struct {
	p *Plugin
	h *sdktest.FakeHost
}

func newSide(t *testing.T) side {
	t.Helper()
	p := New(Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	h := sdktest.NewFakeHost(t, p)
	h.Facts.DataDir = testkit.ShortTempDir(t, "stripejob-") // the jobs' unix sockets go here
	if err := h.Configure([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	return side{p: p, h: h}
}

// engineOf is the running engine of a job towards its first peer.
func (s side) engineOf(t *testing.T, name string) *engine.Engine {
	t.Helper()
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	j := s.p.jobs[name]
	if j == nil || len(j.peers) == 0 {
		t.Fatalf("job %s is not running", name)
	}
	return j.peers[0].e
}

// client connects an application client to job name's unix socket.
func (s side) client(t *testing.T, ctx context.Context, name string) *endpoint.Client {
	t.Helper()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", filepath.Join(s.h.Facts.DataDir, name+".sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return endpoint.NewClient(c, false)
}

// sample is one stats sample of a job, its metrics by name and labels.
type sample map[string]api.Metric

func key(name string, labels map[string]string) string {
	return name + fmt.Sprint(labels) // fmt prints maps sorted
}

func (s side) sample(t *testing.T, job string) sample {
	t.Helper()
	ss, err := s.h.Stats(api.StatsRequest{Jobs: []string{job}, IntervalMillis: 100}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Job != job {
		t.Fatalf("samples %+v, want one of %s", ss, job)
	}
	out := sample{}
	for _, m := range ss[0].Metrics {
		k := key(m.Name, m.Labels)
		if _, dup := out[k]; dup {
			t.Errorf("metric %s twice", k)
		}
		out[k] = m
	}
	return out
}

func (s sample) value(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	m, ok := s[key(name, labels)]
	if !ok {
		t.Fatalf("no metric %s%v", name, labels)
	}
	return m.Value
}

// TestJobDiscoversAndStreamsStats runs a stripe job on each of two namespaces joined by four
// shaped veths, through the fake daemon: both discover each other, a transfer through the
// engines arrives whole and in order, the stats samples show it on every link, Health says
// OK, and after one side stops its job the other's Health names the peer unknown.
func TestJobDiscoversAndStreamsStats(t *testing.T) {
	tb := newTestbed(t)
	a, b := newSide(t), newSide(t)
	const name = "stripe0"
	jobA := api.Job{Name: name, Type: JobType, Config: tb.config(t, true, "round-robin")}
	for _, s := range []struct {
		side
		job api.Job
	}{{a, jobA}, {b, api.Job{Name: name, Type: JobType, Config: tb.config(t, false, "round-robin")}}} {
		status, err := s.h.StartJob(s.job)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(status, "striping over") {
			t.Errorf("status %q", status)
		}
	}
	// Discovery: each side knows the other on every link, and says so in Health.
	for _, s := range []side{a, b} {
		lab.WaitFor(t, 10*time.Second, "both peers discovered on every link", func(context.Context) error {
			h, err := s.h.Health()
			if err != nil {
				return err
			}
			if h.State != api.HealthOK {
				return fmt.Errorf("health %v: %s", h.State, h.Message)
			}
			return nil
		})
	}
	// Start again with the same configuration: left alone (the same engine).
	before := a.engineOf(t, name)
	if _, err := a.h.StartJob(jobA); err != nil {
		t.Fatal(err)
	}
	if a.engineOf(t, name) != before {
		t.Error("Start with the same configuration restarted the job")
	}

	// Traffic: 4 MiB from an application on a to one on b, through the jobs' endpoints
	// (their unix sockets), round-robin over the four links.
	const total, msgSize = 4 << 20, 32 << 10
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	snd, rcv := a.client(t, ctx, name), b.client(t, ctx, name)
	id, err := snd.Register(ctx, endpoint.Registration{Name: "tx", Service: 7, LocalPort: 1000, PeerNode: 2, PeerPort: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rcv.Register(ctx, endpoint.Registration{Name: "rx", Service: 7, LocalPort: 2000, PeerNode: 1, PeerPort: 1000}); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, total)
	for i := range payload {
		payload[i] = byte(i ^ i>>8 ^ i>>16)
	}
	sent := make(chan error, 1)
	go func() {
		for off := 0; off < total; off += msgSize {
			if err := snd.Send(ctx, id, uint32(off/msgSize), payload[off:off+msgSize]); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	var got bytes.Buffer
	for got.Len() < total {
		m, err := rcv.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d bytes: %v", got.Len(), err)
		}
		if m.Type != endpoint.TypeDeliver {
			t.Fatalf("after %d bytes: %v %s", got.Len(), m.Type, m.Text)
		}
		got.Write(m.Payload)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), payload) {
		t.Fatal("the transfer did not arrive whole and in order")
	}

	// Stats: the sender's sample shows the payload over every link, the receiver's delivered it.
	sa := a.sample(t, name)
	if n := len(sa); n != metricsFixed(len(rates), 1, 0)+metricsPerApp {
		t.Errorf("%d metrics, want %d (one application registered)", n, metricsFixed(len(rates), 1, 0)+metricsPerApp)
	}
	peer := map[string]string{"peer": "2"}
	if v := sa.value(t, "stripe_peer_known", peer); v != 1 {
		t.Errorf("stripe_peer_known %v", v)
	}
	// The engine carries the messages with the endpoint's piece headers: a little more.
	if v := sa.value(t, "stripe_sent_bytes", peer); v < total || v > total*1.01 {
		t.Errorf("stripe_sent_bytes %v, want %d and the pieces' headers", v, total)
	}
	if v := sa.value(t, "stripe_peers_known", nil); v != 1 {
		t.Errorf("stripe_peers_known %v", v)
	}
	var sum float64
	for _, p := range tb.pairs {
		l := map[string]string{"peer": "2", "link": p.A.Name}
		tx := sa.value(t, "stripe_link_tx_bytes", l)
		// Round-robin: every link takes a quarter of the frames (more with retransmits).
		if tx < total/5 {
			t.Errorf("link %s carried %v bytes of %d: want at least a fifth", p.A.Name, tx, total)
		}
		sum += tx
		if v := sa.value(t, "stripe_link_peer_macs", l); v != 1 {
			t.Errorf("link %s: %v peer MACs, want 1", p.A.Name, v)
		}
		if v := sa.value(t, "stripe_link_usable", l); v != 1 {
			t.Errorf("link %s usable %v", p.A.Name, v)
		}
		if v := sa.value(t, "stripe_link_choices", l); v == 0 {
			t.Errorf("link %s: no policy choices", p.A.Name)
		}
	}
	if sum < total {
		t.Errorf("links carried %v bytes, less than the %d sent", sum, total)
	}
	sb := b.sample(t, name)
	if v := sb.value(t, "stripe_delivered_bytes", map[string]string{"peer": "1"}); v < total || v > total*1.01 {
		t.Errorf("receiver: stripe_delivered_bytes %v, want %d and the pieces' headers", v, total)
	}
	for _, p := range tb.pairs {
		if v := sb.value(t, "stripe_link_rx_bytes", map[string]string{"peer": "1", "link": p.B.Name}); v < total/5 {
			t.Errorf("receiver link %s: %v bytes received", p.B.Name, v)
		}
	}

	// a stops its job: b's Health names peer 1 unknown once its MACs expire.
	if err := a.h.StopJob(name); err != nil {
		t.Fatal(err)
	}
	if err := a.h.StopJob(name); err != nil {
		t.Errorf("Stop of a stopped job: %v", err)
	}
	lab.WaitFor(t, 10*time.Second, "peer 1 unknown to b", func(context.Context) error {
		h, err := b.h.Health()
		if err != nil {
			return err
		}
		if h.State != api.HealthDegraded || !strings.Contains(h.Message, "peer 1 unknown") {
			return fmt.Errorf("health %v: %s", h.State, h.Message)
		}
		return nil
	})
	if _, err := a.h.Stats(api.StatsRequest{Jobs: []string{name}, IntervalMillis: 100}, 1); err == nil {
		t.Error("stats of a stopped job: a sample arrived")
	}
}

// TestStartRefusesMissingNIC: a job naming a NIC that does not exist is FailedPrecondition
// naming the field, the packet socket opened before it is closed again (the namespace's
// /proc/net/packet), no job is left behind, the job starts once the NIC is named right, and
// starting it with another configuration restarts it, closing its old sockets.
func TestStartRefusesMissingNIC(t *testing.T) {
	ns := lab.NewNetns(t)
	p := lab.NewVethPair(t, lab.VethSpec{ANetns: ns, BNetns: ns})
	s := newSide(t)
	cfg := Config{Node: 1, Netns: ns.Name, Peers: []PeerConfig{{Node: 2}},
		Links: []LinkConfig{{Interface: p.A.Name}, {Interface: "nosuchnic0"}}}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sockets := func() int { return strings.Count(ns.Run(t, "cat", "/proc/net/packet"), "\n") }
	before := sockets()
	_, err = s.h.StartJob(api.Job{Name: "j", Type: JobType, Config: data})
	if after := sockets(); after != before {
		t.Errorf("%d packet sockets in the namespace after the refused Start, %d before", after, before)
	}
	if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), "config.links[1].interface nosuchnic0") {
		t.Fatalf("Start: %v, want FailedPrecondition naming config.links[1].interface", err)
	}
	if h, err := s.h.Health(); err != nil || h.State != api.HealthOK || h.Message != "0 stripe jobs" {
		t.Errorf("health %+v, %v: want OK with no job", h, err)
	}
	if _, err := s.h.StartJob(api.Job{Name: "j", Type: "other", Config: data}); api.CodeOf(err) != api.InvalidArgument {
		t.Errorf("Start of another type: %v, want InvalidArgument", err)
	}
	if _, err := s.h.StartJob(api.Job{Name: "j", Type: JobType, Config: []byte(`{"node": 1}`)}); api.CodeOf(err) != api.InvalidArgument {
		t.Errorf("Start with a bad config: %v, want InvalidArgument", err)
	}
	cfg.Links[1].Interface = p.B.Name
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.h.StartJob(api.Job{Name: "j", Type: JobType, Config: data}); err != nil {
		t.Fatal(err)
	}
	if n := sockets(); n != before+2 {
		t.Errorf("%d packet sockets with the job running, want %d", n, before+2)
	}
	// Another configuration: the job restarts with it, its old sockets closed.
	first := s.engineOf(t, "j")
	cfg.Policy = "hash"
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.h.StartJob(api.Job{Name: "j", Type: JobType, Config: data}); err != nil {
		t.Fatal(err)
	}
	if s.engineOf(t, "j") == first {
		t.Error("Start with another configuration kept the old engine")
	}
	if n := sockets(); n != before+2 {
		t.Errorf("%d packet sockets after the restart, want %d", n, before+2)
	}
	// Alone, with no peer: Health says the peer is unknown.
	h, err := s.h.Health()
	if err != nil || h.State != api.HealthDegraded || !strings.Contains(h.Message, "peer 2 unknown") {
		t.Errorf("health %+v, %v: want Degraded naming peer 2 unknown", h, err)
	}
}
