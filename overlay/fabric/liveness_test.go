//go:build linux

package fabric_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestLivenessAndBatches covers the calls the controller and many-agent processes use:
// WaitRouteVersion wakes on a publish, RoutesFor reads only the nodes asked, AckVersions
// advances each node once, Heartbeat revives a stale node, MarkStale loses to a heartbeat and
// is fenced by the lease, RecordMinApplied stores the minimum over running nodes.
func TestLivenessAndBatches(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "schema/fabric.ovsschema")
	fc := open(t, fabric.Config{Endpoints: cl.Endpoints()})
	watcher := open(t, fabric.Config{Endpoints: cl.Endpoints()})
	ctx := t.Context()
	for _, n := range []string{"a", "b", "c"} {
		if err := fc.RegisterNode(ctx, fabric.NodeSpec{Name: n, Kind: fabric.KindSuper}); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan int64, 1)
	go func() {
		v, err := watcher.WaitRouteVersion(ctx, 0)
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	tables := fabric.Tables{"a": {"b": "b 1"}, "b": {"a": "a 1"}, "c": {"a": "a 2"}}
	if _, err := fc.PublishRoutes(ctx, nil, 1, tables); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if v != 1 {
			t.Fatalf("WaitRouteVersion = %d, want 1", v)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitRouteVersion did not wake on the publish")
	}
	if v, err := watcher.WaitRouteVersion(ctx, 0); err != nil || v != 1 {
		t.Errorf("WaitRouteVersion(0) after the publish = %d, %v", v, err)
	}
	rt, err := fc.RoutesFor(ctx, 1, "a", "c", "ghost")
	if err != nil || len(rt) != 2 || rt["a"]["b"] != "b 1" || rt["c"]["a"] != "a 2" {
		t.Fatalf("RoutesFor = %v, %v; want a's and c's tables only", rt, err)
	}
	if _, err := fc.RoutesFor(ctx, 1); !errors.Is(err, fabric.ErrInvalid) {
		t.Errorf("RoutesFor of no node: %v, want ErrInvalid", err)
	}
	if n, err := fc.AckVersions(ctx, 1, "a", "b", "ghost"); err != nil || n != 2 {
		t.Fatalf("AckVersions = %d, %v; want 2 advanced", n, err)
	}
	if n, err := fc.AckVersions(ctx, 1, "a", "b"); err != nil || n != 0 {
		t.Errorf("second AckVersions = %d, %v; want 0 advanced", n, err)
	}
	if _, err := fc.AckVersions(ctx, 2, "a"); !errors.Is(err, fabric.ErrConflict) {
		t.Errorf("ack of unpublished version 2: %v, want ErrConflict", err)
	}
	// c has not acked: the minimum is 0 until c goes stale.
	if m, err := fc.RecordMinApplied(ctx, nil); err != nil || m != 0 {
		t.Fatalf("RecordMinApplied = %d, %v; want 0", m, err)
	}
	nodes, err := fc.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seenC := nodes[2].LastSeen
	// A heartbeat moves c's last-seen time, so marking with the old value does nothing.
	time.Sleep(5 * time.Millisecond)
	if err := fc.Heartbeat(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if ok, err := fc.MarkStale(ctx, nil, "c", seenC); err != nil || ok {
		t.Errorf("MarkStale with an old last-seen = %v, %v; want not marked", ok, err)
	}
	nodes, _ = fc.Nodes(ctx)
	lease, err := fc.AcquireLease(ctx, "ctl", time.Minute)
	if err != nil || !lease.Held {
		t.Fatal(lease, err)
	}
	if ok, err := fc.MarkStale(ctx, &lease, "c", nodes[2].LastSeen); err != nil || !ok {
		t.Fatalf("MarkStale = %v, %v; want marked", ok, err)
	}
	if m, err := fc.RecordMinApplied(ctx, &lease); err != nil || m != 1 {
		t.Errorf("RecordMinApplied with c stale = %d, %v; want 1", m, err)
	}
	if st, err := fc.Status(ctx); err != nil || st.MinApplied != 1 {
		t.Errorf("status %+v, %v; want min applied 1 stored", st, err)
	}
	nodes, _ = fc.Nodes(ctx)
	if nodes[2].Health != fabric.HealthStale {
		t.Fatalf("c health %s, want stale", nodes[2].Health)
	}
	if err := fc.Heartbeat(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if nodes, _ = fc.Nodes(ctx); nodes[2].Health != fabric.HealthUp {
		t.Errorf("c health after a heartbeat %s, want up", nodes[2].Health)
	}
	if err := fc.Heartbeat(ctx, "ghost"); !errors.Is(err, fabric.ErrUnknownNode) {
		t.Errorf("heartbeat of an unregistered node: %v", err)
	}
	// A lease taken over fences MarkStale and RecordMinApplied.
	if err := fc.ReleaseLease(ctx, "ctl"); err != nil {
		t.Fatal(err)
	}
	if l, err := fc.AcquireLease(ctx, "ctl2", time.Minute); err != nil || !l.Held {
		t.Fatal(l, err)
	}
	if _, err := fc.MarkStale(ctx, &lease, "c", nodes[2].LastSeen); !errors.Is(err, fabric.ErrFenced) {
		t.Errorf("MarkStale with a lost lease: %v, want ErrFenced", err)
	}
	if _, err := fc.RecordMinApplied(ctx, &lease); !errors.Is(err, fabric.ErrFenced) {
		t.Errorf("RecordMinApplied with a lost lease: %v, want ErrFenced", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := watcher.WaitRouteVersion(wctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRouteVersion above the newest: %v, want the deadline", err)
	}
}
