//go:build linux

package stripeplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/test/lab"
)

// multiLinks is how many L2 segments join the three nodes of TestJobServesSeveralPeers.
const multiLinks = 2

// switchedBed is three nodes whose NICs i all hang off one Linux bridge ("switch" i) in a
// namespace of its own, as a site's NICs hang off its L2 switches: every node reaches every
// other over each link, and each NIC hears the frames of both other nodes.
type switchedBed struct {
	nodes [3]*lab.Netns
	nics  [3][]string // nics[n][i]: node n's NIC on switch i
}

func newSwitchedBed(t *testing.T) *switchedBed {
	t.Helper()
	sw := lab.NewNetns(t)
	b := &switchedBed{}
	for n := range b.nodes {
		b.nodes[n] = lab.NewNetns(t)
	}
	for i := range multiLinks {
		br := fmt.Sprintf("sw%d", i)
		sw.Run(t, "ip", "link", "add", br, "type", "bridge")
		sw.Run(t, "ip", "link", "set", br, "up")
		for n, ns := range b.nodes {
			p := lab.NewVethPair(t, lab.VethSpec{ANetns: ns, BNetns: sw})
			sw.Run(t, "ip", "link", "set", p.B.Name, "master", br)
			b.nics[n] = append(b.nics[n], p.A.Name)
		}
	}
	return b
}

// config is node n's (ids 1, 2, 3) job configuration with the given peers.
func (b *switchedBed) config(t *testing.T, n int, peers ...uint32) []byte {
	t.Helper()
	c := Config{Node: uint32(n + 1), Netns: b.nodes[n].Name, Policy: "round-robin"}
	for _, p := range peers {
		c.Peers = append(c.Peers, PeerConfig{Node: p})
	}
	for _, nic := range b.nics[n] {
		c.Links = append(c.Links, LinkConfig{Interface: nic, CapacityMbit: 1000})
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestJobServesSeveralPeers: node 1's job has two peers (nodes 2 and 3) over the same NICs,
// which reach both through shared L2 segments; nodes 2 and 3 each have node 1 as their only
// peer. Each of node 1's engines learns only its own peer's MACs (the other node's frames
// reach the same NICs and are filtered out in the kernel), node 1 sends to 2 and to 3 at once
// while 3 sends to 1, every stream arrives whole and in order at its own application only,
// and the stats count each peer's bytes apart.
func TestJobServesSeveralPeers(t *testing.T) {
	bed := newSwitchedBed(t)
	const name = "stripe0"
	var sides [3]side
	peersOf := [3][]uint32{{2, 3}, {1}, {1}}
	for n := range sides {
		sides[n] = newSide(t)
		if _, err := sides[n].h.StartJob(api.Job{Name: name, Type: JobType, Config: bed.config(t, n, peersOf[n]...)}); err != nil {
			t.Fatalf("node %d: %v", n+1, err)
		}
	}
	for n, s := range sides {
		lab.WaitFor(t, 10*time.Second, fmt.Sprintf("node %d discovers its peers on every link", n+1), func(context.Context) error {
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
	// Node 1 runs an engine per peer over the same NICs. Each socket takes only its peer's
	// frames (a kernel filter), so each engine knows its own peer alone, on every link.
	sides[0].p.mu.Lock()
	engines := sides[0].p.jobs[name].peers
	sides[0].p.mu.Unlock()
	if len(engines) != 2 {
		t.Fatalf("node 1 runs %d engines, want one per peer (2)", len(engines))
	}
	for k, pe := range engines {
		want := peersOf[0][k]
		known := pe.e.Peers()
		if len(known) != 1 || known[0].ID != want || len(known[0].NICs) != multiLinks {
			t.Errorf("node 1's engine towards node %d knows %+v: want node %d alone, on %d links", want, known, want, multiLinks)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const total, msgSize = 1 << 20, 16 << 10
	type flow struct {
		from, to         int // node indexes
		fromPort, toPort uint16
	}
	flows := []flow{{0, 1, 1001, 2001}, {0, 2, 1002, 3001}, {2, 0, 3002, 1003}}
	payloadOf := func(k int) []byte {
		p := make([]byte, total)
		for i := range p {
			p[i] = byte(i ^ i>>8 ^ k*37)
		}
		return p
	}
	errs := make(chan error, 2*len(flows))
	for k, f := range flows {
		snd, rcv := sides[f.from].client(t, ctx, name), sides[f.to].client(t, ctx, name)
		id, err := snd.Register(ctx, endpoint.Registration{Name: fmt.Sprintf("tx%d", k), Service: 7, LocalPort: f.fromPort,
			PeerNode: uint32(f.to + 1), PeerPort: f.toPort})
		if err != nil {
			t.Fatalf("flow %d: %v", k, err)
		}
		if _, err := rcv.Register(ctx, endpoint.Registration{Name: fmt.Sprintf("rx%d", k), Service: 7, LocalPort: f.toPort,
			PeerNode: uint32(f.from + 1), PeerPort: f.fromPort}); err != nil {
			t.Fatalf("flow %d: %v", k, err)
		}
		payload := payloadOf(k)
		go func() {
			for off := 0; off < total; off += msgSize {
				if err := snd.Send(ctx, id, uint32(off/msgSize), payload[off:off+msgSize]); err != nil {
					errs <- fmt.Errorf("flow %d send: %w", k, err)
					return
				}
			}
			errs <- nil
		}()
		go func() {
			var got bytes.Buffer
			for got.Len() < total {
				m, err := rcv.Next(ctx)
				if err != nil {
					errs <- fmt.Errorf("flow %d: after %d bytes: %w", k, got.Len(), err)
					return
				}
				if m.Type != endpoint.TypeDeliver {
					errs <- fmt.Errorf("flow %d: after %d bytes: %v %s", k, got.Len(), m.Type, m.Text)
					return
				}
				got.Write(m.Payload)
			}
			if !bytes.Equal(got.Bytes(), payload) {
				errs <- fmt.Errorf("flow %d (node %d → node %d) did not arrive whole and in order", k, f.from+1, f.to+1)
				return
			}
			errs <- nil
		}()
	}
	for range 2 * len(flows) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	// Node 1's stats: both peers known, each peer's bytes counted apart.
	s1 := sides[0].sample(t, name)
	if v := s1.value(t, "stripe_peers_known", nil); v != 2 {
		t.Errorf("node 1: stripe_peers_known %v, want 2", v)
	}
	for _, p := range []string{"2", "3"} {
		if v := s1.value(t, "stripe_sent_bytes", map[string]string{"peer": p}); v < total || v > total*1.02 {
			t.Errorf("node 1: stripe_sent_bytes to peer %s = %v, want %d and the pieces' headers", p, v, total)
		}
	}
	if v := s1.value(t, "stripe_delivered_bytes", map[string]string{"peer": "3"}); v < total || v > total*1.02 {
		t.Errorf("node 1: stripe_delivered_bytes from peer 3 = %v, want %d", v, total)
	}
	if v := s1.value(t, "stripe_delivered_bytes", map[string]string{"peer": "2"}); v != 0 {
		t.Errorf("node 1: stripe_delivered_bytes from peer 2 = %v, want 0 (node 2 sent nothing)", v)
	}
	// Node 2 has node 1 as its only peer: it counts nothing of node 3's traffic.
	s2 := sides[1].sample(t, name)
	if v := s2.value(t, "stripe_peers_known", nil); v != 1 {
		t.Errorf("node 2: stripe_peers_known %v, want 1", v)
	}
	if v := s2.value(t, "stripe_delivered_bytes", map[string]string{"peer": "1"}); v < total || v > total*1.02 {
		t.Errorf("node 2: stripe_delivered_bytes from peer 1 = %v, want %d", v, total)
	}
}
