//go:build linux

package ovsdb

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/test/lab"
)

// These tests run the guards against a real ovsdb-server (whose "wait" semantics libovsdb's
// in-memory server only approximates): another writer, ovs-vsctl, changes exactly what a plan
// read, between planning and sending.

func dialReal(t *testing.T) (*Client, *lab.OVSDB) {
	t.Helper()
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{Endpoints: []string{db.Endpoint}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, db
}

// once returns a hook that runs f before the first transaction only.
func once(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

func TestRealServerGuards(t *testing.T) {
	c, db := dialReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nowait := CommitOptions{NoWait: true}
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}).
		Commit(ctx, nowait); err != nil {
		t.Fatal(err)
	}

	t.Run("global key taken meanwhile", func(t *testing.T) {
		c.beforeTransact = once(func() { db.Vsctl(t, "--no-wait", "set", "Open_vSwitch", ".", "other_config:ovsplane-race=theirs") })
		defer func() { c.beforeTransact = nil }()
		_, err := c.NewTxn(1).SetGlobal(map[string]string{"ovsplane-race": "ours"}).Commit(ctx, nowait)
		if !errors.Is(err, ErrNotOwned) {
			t.Fatalf("err = %v, want ErrNotOwned after the retry sees the other writer's key", err)
		}
		if got := db.Get(t, "Open_vSwitch", ".", "other_config:ovsplane-race"); got != "theirs" {
			t.Errorf("other_config:ovsplane-race = %q, want theirs", got)
		}
		if owned, _ := c.OwnedGlobal(ctx); len(owned) != 0 {
			t.Errorf("OwnedGlobal = %v, want nothing claimed", owned)
		}
	})

	t.Run("port added to a bridge being deleted", func(t *testing.T) {
		c.beforeTransact = once(func() { db.Vsctl(t, "--no-wait", "add-port", "br0", "theirs") })
		defer func() { c.beforeTransact = nil }()
		_, err := c.NewTxn(1).DeleteBridge("br0").Commit(ctx, nowait)
		if !errors.Is(err, ErrNotOwned) {
			t.Fatalf("err = %v, want ErrNotOwned (the bridge now holds a foreign port)", err)
		}
		if got := db.Vsctl(t, "list-ports", "br0"); strings.Fields(got) == nil || strings.Join(strings.Fields(got), " ") != "p1 theirs" {
			t.Errorf("ports of br0 = %q, want p1 and theirs", got)
		}
	})

	t.Run("owned port edited meanwhile", func(t *testing.T) {
		c.beforeTransact = once(func() { db.Vsctl(t, "--no-wait", "set", "Port", "p1", "other_config:note=operator") })
		defer func() { c.beforeTransact = nil }()
		res, err := c.NewTxn(2).EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: "p1", OtherConfig: map[string]string{"mine": "1"}}}).
			Commit(ctx, nowait)
		if err != nil {
			t.Fatal(err)
		}
		if res.Attempts != 2 {
			t.Errorf("Attempts = %d, want 2: the first must be refused by its wait on other_config", res.Attempts)
		}
		if got := db.Get(t, "Port", "p1", "other_config"); got != "{mine=\"1\"}" {
			t.Errorf("p1 other_config = %s, want {mine=\"1\"}", got)
		}
	})
}
