//go:build linux

package fabric_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// open connects a client to endpoints and closes it at cleanup.
func open(t *testing.T, cfg fabric.Config) *fabric.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	c, err := fabric.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open %v: %v", cfg.Endpoints, err)
	}
	t.Cleanup(c.Close)
	return c
}

// clock is a settable clock shared by the lease test's controllers.
type clock struct{ ms atomic.Int64 }

func (c *clock) now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *clock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// TestEachMemberReadsAndWrites writes through every member (followers forward to the leader)
// and reads every write back through every member.
func TestEachMemberReadsAndWrites(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "schema/fabric.ovsschema")
	var clients []*fabric.Client
	for _, m := range cl.Members {
		clients = append(clients, open(t, fabric.Config{Endpoints: []string{m.Endpoint}, AnyMember: true}))
	}
	ctx := t.Context()
	for i, c := range clients {
		spec := fabric.NodeSpec{Name: fmt.Sprintf("n%d", i), Kind: fabric.KindOrdinary,
			Carriers: []string{"wan0"}, Underlay: []string{fmt.Sprintf("192.0.2.%d", i+1)}}
		if err := c.RegisterNode(ctx, spec); err != nil {
			t.Fatalf("register %s through member %d: %v", spec.Name, i, err)
		}
	}
	if err := clients[2].ReportLink(ctx, fabric.LinkReport{A: "n1", B: "n0", BandwidthKbps: 1000, LatencyUs: 250, LossPPM: 10}); err != nil {
		t.Fatalf("report link: %v", err)
	}
	for i := range clients {
		lab.WaitFor(t, 10*time.Second, fmt.Sprintf("member %d to show 3 nodes and the link", i), func(ctx context.Context) error {
			nodes, err := clients[i].Nodes(ctx)
			if err != nil {
				return err
			}
			if len(nodes) != 3 || nodes[1].Name != "n1" || nodes[1].Underlay[0] != "192.0.2.2" || nodes[1].Kind != fabric.KindOrdinary {
				return fmt.Errorf("nodes %+v", nodes)
			}
			links, err := clients[i].Links(ctx)
			if err != nil {
				return err
			}
			if len(links) != 1 || links[0].A != "n0" || links[0].B != "n1" || links[0].LatencyUs != 250 {
				return fmt.Errorf("links %+v", links)
			}
			return nil
		})
	}
	// Bad input is refused before anything is sent, with the object named.
	err := clients[0].ReportLink(ctx, fabric.LinkReport{A: "n0", B: "n1", LossPPM: 2_000_000})
	if !errors.Is(err, fabric.ErrInvalid) {
		t.Errorf("loss 2000000 ppm: got %v, want ErrInvalid", err)
	}
	err = clients[0].ReportLink(ctx, fabric.LinkReport{A: "n0", B: "ghost"})
	if !errors.Is(err, fabric.ErrUnknownNode) {
		t.Errorf("link to unregistered node: got %v, want ErrUnknownNode", err)
	}
}

// TestLeaderKillDuringPublish publishes route versions in a loop while the leader is killed:
// the client reconnects to the new leader, every version is written exactly once, in order,
// and each node acknowledges each version exactly once.
func TestLeaderKillDuringPublish(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "schema/fabric.ovsschema")
	ctl := open(t, fabric.Config{Endpoints: cl.Endpoints()})
	node := open(t, fabric.Config{Endpoints: cl.Endpoints()})
	ctx := t.Context()
	for _, n := range []string{"a", "b"} {
		if err := node.RegisterNode(ctx, fabric.NodeSpec{Name: n, Kind: fabric.KindSuper}); err != nil {
			t.Fatalf("register %s: %v", n, err)
		}
	}
	const versions, killAt = 30, 10
	leader := cl.Leader(t, 10*time.Second, lab.ClusterSize)
	// The loop runs in its own goroutine so that the kill, from the test goroutine, lands
	// while publishes and acknowledgements are in flight.
	reached := make(chan struct{})
	loopDone := make(chan error, 1)
	go func() {
		for v := int64(1); v <= versions; v++ {
			if v == killAt {
				close(reached)
			}
			if err := publishAndAck(ctx, ctl, node, v); err != nil {
				loopDone <- err
				return
			}
		}
		loopDone <- nil
	}()
	select {
	case <-reached:
		leader.Kill(t)
	case err := <-loopDone:
		t.Fatalf("publish loop ended before version %d: %v", killAt, err)
	}
	if err := <-loopDone; err != nil {
		t.Fatal(err)
	}
	newLeader := cl.Leader(t, 10*time.Second, lab.ClusterSize)
	if newLeader == leader {
		t.Fatalf("member %d, killed, is still reported leader", leader.Index)
	}
	// Replaying the last publish is a no-op; an old one is a conflict; a skip is a conflict.
	if pub, err := ctl.PublishRoutes(ctx, nil, versions, fabric.Tables{"a": {"b": fmt.Sprintf("via-%d", versions)}, "b": {"a": fmt.Sprintf("via-%d", versions)}}); err != nil || pub.Version != versions {
		t.Errorf("replay of version %d: %+v, %v", versions, pub, err)
	}
	if _, err := ctl.PublishRoutes(ctx, nil, 3, fabric.Tables{}); !errors.Is(err, fabric.ErrConflict) {
		t.Errorf("stale version 3: got %v, want ErrConflict", err)
	}
	if _, err := ctl.PublishRoutes(ctx, nil, versions+2, fabric.Tables{}); !errors.Is(err, fabric.ErrConflict) {
		t.Errorf("skipped version: got %v, want ErrConflict", err)
	}
	// Unchanged tables are not written again.
	same := fabric.Tables{"a": {"b": fmt.Sprintf("via-%d", versions)}, "b": {"a": fmt.Sprintf("via-%d", versions)}}
	if pub, err := ctl.PublishRoutes(ctx, nil, versions+1, same); err != nil || pub.Wrote || pub.Version != versions {
		t.Errorf("unchanged tables as version %d: %+v, %v; want no write", versions+1, pub, err)
	}
	// Acknowledging an unpublished version is refused.
	if _, err := node.AckVersion(ctx, "a", versions+1); !errors.Is(err, fabric.ErrConflict) {
		t.Errorf("ack of unpublished version: got %v, want ErrConflict", err)
	}
	minV, per, err := node.MinApplied(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if minV != 5 || per["a"] != versions || per["b"] != 5 {
		t.Errorf("MinApplied = %d, %v; want 5 with a at %d and b at 5", minV, per, versions)
	}
	st, err := node.Status(ctx)
	if err != nil || st.RouteVersion != versions || st.MinApplied != 5 {
		t.Errorf("status %+v, %v; want route version %d, min applied 5", st, err, versions)
	}
	// Tables older than every node's applied version have been dropped; the current is kept.
	if old, err := node.Routes(ctx, 2); err != nil || len(old) != 0 {
		t.Errorf("routes of version 2 after b applied 5: %v, %v; want dropped", old, err)
	}
	// A node marked down no longer holds MinApplied back; acknowledging marks it up again.
	if err := node.SetHealth(ctx, "b", fabric.HealthDown); err != nil {
		t.Fatal(err)
	}
	if minV, _, err := node.MinApplied(ctx); err != nil || minV != versions {
		t.Errorf("MinApplied with b down = %d, %v; want %d", minV, err, versions)
	}
	if _, err := node.AckVersion(ctx, "b", 6); err != nil {
		t.Fatal(err)
	}
	if minV, _, err := node.MinApplied(ctx); err != nil || minV != 6 {
		t.Errorf("MinApplied after b acked 6 = %d, %v; want 6", minV, err)
	}
	if err := node.SetHealth(ctx, "ghost", fabric.HealthDown); !errors.Is(err, fabric.ErrUnknownNode) {
		t.Errorf("health of an unregistered node: got %v, want ErrUnknownNode", err)
	}
}

// TestLeaseContention: two controllers race for the lease; exactly one holds it at any time,
// the other takes over only after expiry or release, and a fenced publish by the former holder
// fails.
func TestLeaseContention(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "schema/fabric.ovsschema")
	var clk clock
	clk.ms.Store(1_000_000)
	names := []string{"ctl-a", "ctl-b"}
	var ctls []*fabric.Client
	for range names {
		ctls = append(ctls, open(t, fabric.Config{Endpoints: cl.Endpoints(), Now: clk.now}))
	}
	ctx := t.Context()
	const ttl = 10 * time.Second
	prevEpoch := int64(0)
	for round := range 5 {
		// Both race for the (free or expired) lease at the same moment.
		leases := make([]fabric.Lease, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range ctls {
			wg.Go(func() { leases[i], errs[i] = ctls[i].AcquireLease(ctx, names[i], ttl) })
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: acquire: %v, %v", round, errs[0], errs[1])
		}
		if leases[0].Held == leases[1].Held {
			t.Fatalf("round %d: held by a %v, by b %v; want exactly one", round, leases[0].Held, leases[1].Held)
		}
		w := 0
		if leases[1].Held {
			w = 1
		}
		l := 1 - w
		if leases[l].Holder != names[w] || leases[w].Epoch <= prevEpoch {
			t.Fatalf("round %d: loser sees holder %q, winner epoch %d after %d", round, leases[l].Holder, leases[w].Epoch, prevEpoch)
		}
		// Renewal keeps the epoch; the loser still cannot take it.
		clk.add(ttl / 2)
		renewed, err := ctls[w].AcquireLease(ctx, names[w], ttl)
		if err != nil || !renewed.Held || renewed.Epoch != leases[w].Epoch {
			t.Fatalf("round %d: renew: %+v, %v", round, renewed, err)
		}
		clk.add(ttl / 2)
		if again, err := ctls[l].AcquireLease(ctx, names[l], ttl); err != nil || again.Held {
			t.Fatalf("round %d: loser took a renewed lease: %+v, %v", round, again, err)
		}
		// The winner publishes under its lease.
		if _, err := ctls[w].PublishRoutes(ctx, &renewed, int64(round+1), fabric.Tables{"x": {"r": fmt.Sprint(round)}}); err != nil {
			t.Fatalf("round %d: fenced publish by the holder: %v", round, err)
		}
		// Even rounds: expiry hands the lease over; odd rounds: release.
		if round%2 == 0 {
			clk.add(ttl + time.Second)
		} else if err := ctls[w].ReleaseLease(ctx, names[w]); err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
		taken, err := ctls[l].AcquireLease(ctx, names[l], ttl)
		if err != nil || !taken.Held || taken.Epoch != renewed.Epoch+1 {
			t.Fatalf("round %d: takeover: %+v, %v", round, taken, err)
		}
		// The former holder's lease no longer fences anything.
		_, err = ctls[w].PublishRoutes(ctx, &renewed, int64(round+2), fabric.Tables{"x": {"r": "stale"}})
		if !errors.Is(err, fabric.ErrFenced) {
			t.Fatalf("round %d: publish under a lost lease: got %v, want ErrFenced", round, err)
		}
		if err := ctls[l].ReleaseLease(ctx, names[l]); err != nil {
			t.Fatal(err)
		}
		prevEpoch = taken.Epoch
	}
}

// publishAndAck publishes version v, reads it back, and acknowledges it from node a (and from
// b up to version 5), checking that each call did its write exactly once.
func publishAndAck(ctx context.Context, ctl, node *fabric.Client, v int64) error {
	tables := fabric.Tables{"a": {"b": fmt.Sprintf("via-%d", v)}, "b": {"a": fmt.Sprintf("via-%d", v)}}
	pub, err := ctl.PublishRoutes(ctx, nil, v, tables)
	if err != nil {
		return fmt.Errorf("publish version %d: %w", v, err)
	}
	if pub.Version != v || !pub.Wrote {
		return fmt.Errorf("publish version %d: got %+v, want it written", v, pub)
	}
	got, err := node.Routes(ctx, v)
	if err != nil || got["a"]["b"] != fmt.Sprintf("via-%d", v) {
		return fmt.Errorf("routes of version %d: %v, %v", v, got, err)
	}
	if adv, err := node.AckVersion(ctx, "a", v); err != nil || !adv {
		return fmt.Errorf("a acks version %d: advanced %v, %v", v, adv, err)
	}
	if v <= 5 {
		if adv, err := node.AckVersion(ctx, "b", v); err != nil || !adv {
			return fmt.Errorf("b acks version %d: advanced %v, %v", v, adv, err)
		}
	}
	// A second acknowledgement of the same version changes nothing.
	if adv, err := node.AckVersion(ctx, "a", v); err != nil || adv {
		return fmt.Errorf("a acks version %d twice: advanced %v, %v", v, adv, err)
	}
	return nil
}
