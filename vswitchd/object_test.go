package vswitchd_test

import (
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// TestDeleteBridgeTakesItsObjectsWhole: deleting an API bridge that holds the first port of a
// plugin object removes the object's other rows — a port on a bridge the object created, and
// that bridge — in the same call, and detaches the object once.
func TestDeleteBridgeTakesItsObjectsWhole(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	d, _ := startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	if _, err := d.ApplyBridge(e.Ctx, model.Bridge{Name: "br-api", DatapathType: "netdev"}); err != nil {
		t.Fatal(err)
	}
	info, err := d.ApplyPort(e.Ctx, "br-api", thingPort("m1", map[string]string{"more": "1"}))
	if err != nil || len(info.Interfaces) != 2 {
		t.Fatalf("ApplyPort m1: %+v, %v", info, err)
	}
	if err := e.Raw.Get(e.Ctx, &vswitch.Bridge{Name: "m1-mb"}); err != nil {
		t.Fatalf("the object's bridge was not created: %v", err)
	}
	if err := d.DeleteBridge(e.Ctx, "br-api"); err != nil {
		t.Fatal(err)
	}
	// The raw client's cache gets each transaction as one update: once m1 is gone from it,
	// whatever went in the same transaction is gone too.
	testkit.EventuallyTrue(t, 20*time.Second, time.Millisecond, "m1 gone", func() bool {
		return e.Raw.Get(e.Ctx, &vswitch.Port{Name: "m1"}) != nil
	})
	if err := e.Raw.Get(e.Ctx, &vswitch.Port{Name: "m1-m"}); err == nil {
		t.Errorf("port m1-m still there after its object's bridge's deletion")
	}
	if err := e.Raw.Get(e.Ctx, &vswitch.Bridge{Name: "m1-mb"}); err == nil {
		t.Errorf("the object's bridge m1-mb still there after br-api's deletion")
	}
	if len(fp.detached) != 1 || fp.detached[0] != "m1 st:m1:1" {
		t.Errorf("detached %q, want m1 once", fp.detached)
	}
}

// TestReappliedObjectTakesItsNewShape: the same request applied again, whose plugin now
// answers with fewer rows, is written with its new shape: the port and the bridge the old
// shape had go with it.
func TestReappliedObjectTakesItsNewShape(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	d, _ := startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("m2", map[string]string{"more": "1"})); err != nil {
		t.Fatal(err)
	}
	fp.mu.Lock()
	fp.noMore = true
	fp.mu.Unlock()
	info, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("m2", map[string]string{"more": "1"}))
	if err != nil || len(info.Interfaces) != 1 {
		t.Fatalf("re-apply with one port: %+v, %v", info, err)
	}
	testkit.EventuallyTrue(t, 20*time.Second, time.Millisecond, "m2-m and m2-mb gone", func() bool {
		return e.Raw.Get(e.Ctx, &vswitch.Port{Name: "m2-m"}) != nil && e.Raw.Get(e.Ctx, &vswitch.Bridge{Name: "m2-mb"}) != nil
	})
	if err := e.Raw.Get(e.Ctx, &vswitch.Port{Name: "m2"}); err != nil {
		t.Errorf("port m2 gone: %v", err)
	}
}
