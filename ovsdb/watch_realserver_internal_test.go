//go:build linux

package ovsdb

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
)

// collectUntil collects from w until cond holds for what it gathered (a bound only keeps a
// broken test from hanging).
func collectUntil(t *testing.T, w *InterfaceWatch, what string, cond func(views map[string]InterfaceView, gone []string) bool) {
	t.Helper()
	views, gone := map[string]InterfaceView{}, []string(nil)
	deadline := time.After(20 * time.Second)
	for {
		u := w.Collect(false)
		for _, v := range u.Views {
			views[v.Name] = v
		}
		gone = append(gone, u.Gone...)
		if cond(views, gone) {
			return
		}
		select {
		case <-w.Ready():
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: views %v, gone %v", what, views, gone)
		}
	}
}

// The watch sees rows written by ovs-vsctl with their port and bridge, a change of the port's
// external_ids as a change of its interface, a move to another bridge, and a deletion; after
// ovsdb-server restarts (the cache refilled without delete events) the next Collect is Full.
func TestRealServerInterfaceWatch(t *testing.T) {
	c, db := dialReal(t)
	db.Vsctl(t, "--no-wait", "add-br", "br0", "--", "add-port", "br0", "pre", "--", "set", "Interface", "pre", "type=internal")
	w := c.WatchInterfaces()
	defer w.Close()
	collectUntil(t, w, "first view", func(v map[string]InterfaceView, _ []string) bool {
		return v["pre"].Bridge == "br0" && v["pre"].Port == "pre" && v["pre"].Type == "internal"
	})
	if u := w.Collect(true); !u.Full || !slices.ContainsFunc(u.Views, func(v InterfaceView) bool { return v.Name == "br0" }) {
		t.Fatalf("full collect: %+v", u)
	}
	db.Vsctl(t, "--no-wait", "add-port", "br0", "p1", "--", "set", "Interface", "p1", "external_ids:iface-id=x",
		"--", "set", "Port", "p1", "external_ids:role=a")
	collectUntil(t, w, "p1 added", func(v map[string]InterfaceView, _ []string) bool {
		return v["p1"].Bridge == "br0" && v["p1"].ExternalIDs["iface-id"] == "x" && v["p1"].PortExternalIDs["role"] == "a"
	})
	db.Vsctl(t, "--no-wait", "set", "Port", "p1", "external_ids:role=b")
	collectUntil(t, w, "p1's port changed", func(v map[string]InterfaceView, _ []string) bool {
		return v["p1"].PortExternalIDs["role"] == "b"
	})
	db.Vsctl(t, "--no-wait", "add-br", "br1", "--", "del-port", "br0", "p1", "--", "add-port", "br1", "p1")
	collectUntil(t, w, "p1 moved", func(v map[string]InterfaceView, _ []string) bool { return v["p1"].Bridge == "br1" })
	db.Vsctl(t, "--no-wait", "del-port", "br1", "p1")
	collectUntil(t, w, "p1 gone", func(_ map[string]InterfaceView, gone []string) bool { return slices.Contains(gone, "p1") })

	db.Restart(t)
	if err := c.waitConnected(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		u := w.Collect(false)
		if u.Full && len(u.Views) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no full collect after the reconnection: %+v", u)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SetInterfaceConfig on an interface ovs-vsctl created: a key is set and recorded, someone
// else's key is neither overwritten nor removed, a recorded key is removed with its record; a
// concurrent change of other_config between planning and sending makes the server refuse and
// Commit plan again; the daemon's own EnsurePort keeps the recorded key on an owned interface.
func TestRealServerSetInterfaceConfig(t *testing.T) {
	c, db := dialReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nowait := CommitOptions{NoWait: true}
	db.Vsctl(t, "--no-wait", "add-br", "brf", "--", "add-port", "brf", "f1", "--", "set", "Interface", "f1", "other_config:theirs=1")
	if err := c.waitFor(ctx, "f1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewTxn(1).SetInterfaceConfig("dsa", InterfaceConfig{Interface: "f1",
		Set: map[string]string{"mine": "a", "theirs": "2"}, Remove: []string{"theirs"}}).Commit(ctx, nowait); err != nil {
		t.Fatal(err)
	}
	if got := db.Get(t, "Interface", "f1", "other_config"); got != `{mine=a, theirs="1"}` {
		t.Errorf("other_config = %s", got)
	}
	if got := db.Get(t, "Interface", "f1", "external_ids"); got != `{ovsplane-other-config-dsa=mine}` {
		t.Errorf("external_ids = %s", got)
	}

	// Another writer changes other_config between planning and sending: the guard fails, and
	// the retry keeps that writer's key.
	c.beforeTransact = once(func() { db.Vsctl(t, "--no-wait", "set", "Interface", "f1", "other_config:late=1") })
	raced, err := c.NewTxn(1).SetInterfaceConfig("dsa", InterfaceConfig{Interface: "f1", Set: map[string]string{"mine": "b"}}).Commit(ctx, nowait)
	c.beforeTransact = nil
	if err != nil {
		t.Fatal(err)
	}
	if raced.Attempts < 2 {
		t.Errorf("the concurrent change did not make the server refuse the first attempt (%d attempts)", raced.Attempts)
	}
	if got := db.Get(t, "Interface", "f1", "other_config"); got != `{late="1", mine=b, theirs="1"}` {
		t.Errorf("after the race other_config = %s", got)
	}
	if _, err := c.NewTxn(1).SetInterfaceConfig("dsa", InterfaceConfig{Interface: "f1", Remove: []string{"mine", "late"}}).Commit(ctx, nowait); err != nil {
		t.Fatal(err)
	}
	if got := db.Get(t, "Interface", "f1", "other_config"); got != `{late="1", theirs="1"}` {
		t.Errorf("after Remove other_config = %s", got)
	}
	if got := db.Get(t, "Interface", "f1", "external_ids"); got != `{}` {
		t.Errorf("after Remove external_ids = %s", got)
	}

	// An owned interface: the daemon's EnsurePort of the same spec keeps the watcher's key.
	spec := PortOn{Bridge: "bro", Port: model.Port{Name: "o1", Interfaces: []model.Interface{{Name: "o1", Type: "internal",
		OtherConfig: map[string]string{"spec": "1"}}}}}
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "bro"}, nil).EnsurePort(spec).Commit(ctx, nowait); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewTxn(1).SetInterfaceConfig("dsa", InterfaceConfig{Interface: "o1", Set: map[string]string{"mine": "a"}}).Commit(ctx, nowait); err != nil {
		t.Fatal(err)
	}
	res, err := c.NewTxn(2).EnsurePort(spec).Commit(ctx, nowait)
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Get(t, "Interface", "o1", "other_config"); got != `{mine=a, spec="1"}` || res.Ops != 0 {
		t.Errorf("after EnsurePort other_config = %s (%d operations sent)", got, res.Ops)
	}
	// A second intent on the same interface in one Txn is refused whole.
	if _, err := c.NewTxn(1).SetInterfaceConfig("dsa", InterfaceConfig{Interface: "o1", Set: map[string]string{"x": "1"}}).
		SetInterfaceConfig("other", InterfaceConfig{Interface: "o1", Set: map[string]string{"y": "1"}}).Commit(ctx, nowait); err == nil {
		t.Error("two intents on one interface in one transaction were accepted")
	}
	for _, bad := range []InterfaceConfig{{Interface: "o1", Set: map[string]string{"a,b": "1"}}, {Interface: "o1", Remove: []string{""}}, {Interface: ""}} {
		if _, err := c.NewTxn(1).SetInterfaceConfig("dsa", bad).Commit(ctx, nowait); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// waitFor waits until the cache shows interface name.
func (c *Client) waitFor(ctx context.Context, name string) error {
	for {
		ch := c.changes()
		if _, err := c.Interface(name); err == nil {
			return nil
		}
		select {
		case <-ch:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
