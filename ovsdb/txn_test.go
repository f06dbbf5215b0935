package ovsdb_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/cache"
	libmodel "github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

func TestEnsureBridgeAndPortCreatesEverythingInOneTransaction(t *testing.T) {
	e := newEnv(t)
	// Watch, as another client, the first version of every Interface row: a create-then-set
	// would show an Add without options followed by an Update.
	var mu sync.Mutex
	firstSeen := map[string]*vswitch.Interface{}
	updatedLater := map[string]bool{}
	e.foreign.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc: func(table string, m libmodel.Model) {
			if ifc, ok := m.(*vswitch.Interface); ok {
				mu.Lock()
				firstSeen[ifc.Name] = ifc
				mu.Unlock()
			}
		},
		UpdateFunc: func(table string, _, m libmodel.Model) {
			if ifc, ok := m.(*vswitch.Interface); ok {
				mu.Lock()
				updatedLater[ifc.Name] = true
				mu.Unlock()
			}
		},
	})
	res := commit(t, e.c.NewTxn(7).
		EnsureBridge(model.Bridge{Name: "br0", DatapathType: "netdev", FailMode: "secure",
			Protocols: []string{"OpenFlow13"}, OtherConfig: map[string]string{"hwaddr": "02:00:00:00:00:01"},
			ExternalIDs: map[string]string{"site": "a"}}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "dpdk0", Tag: ptr(10),
			ExternalIDs: map[string]string{"role": "uplink"},
			Interfaces: []model.Interface{{Name: "dpdk0", Type: "dpdk",
				Options:     map[string]string{"dpdk-devargs": "net_af_packet0,iface=veth0"},
				OtherConfig: map[string]string{"pmd-rxq-affinity": "0:1"},
				ExternalIDs: map[string]string{"attached-mac": "02:00:00:00:00:02"},
				MTURequest:  ptr(9000), OFPortRequest: ptr(5)}}}}))
	if res.Attempts != 1 {
		t.Errorf("Attempts = %d, want 1", res.Attempts)
	}
	br := getBridge(t, e, "br0")
	if br.DatapathType != "netdev" || br.FailMode == nil || *br.FailMode != "secure" ||
		!slices.Equal(br.Protocols, []vswitch.BridgeProtocols{"OpenFlow13"}) || br.OtherConfig["hwaddr"] == "" {
		t.Errorf("bridge columns not written: %+v", br)
	}
	if br.ExternalIDs[ovsdb.OwnerKey] != ovsdb.DefaultOwner || br.ExternalIDs[ovsdb.GenerationKey] != "7" || br.ExternalIDs["site"] != "a" {
		t.Errorf("bridge external_ids = %v, want owner, generation 7 and site=a", br.ExternalIDs)
	}
	if len(br.Ports) != 2 {
		t.Errorf("bridge has %d ports, want 2 (local port br0 and dpdk0)", len(br.Ports))
	}
	eventually(t, func() string {
		mu.Lock()
		defer mu.Unlock()
		if firstSeen["dpdk0"] == nil {
			return "interface dpdk0 never seen"
		}
		return ""
	})
	mu.Lock()
	ifc := firstSeen["dpdk0"]
	if ifc.Type != "dpdk" || ifc.Options["dpdk-devargs"] == "" || ifc.OtherConfig["pmd-rxq-affinity"] != "0:1" ||
		ifc.MTURequest == nil || *ifc.MTURequest != 9000 || ifc.OfportRequest == nil || *ifc.OfportRequest != 5 ||
		ifc.ExternalIDs[ovsdb.OwnerKey] == "" {
		t.Errorf("first version of dpdk0 lacks columns (create-then-set?): %+v", ifc)
	}
	if updatedLater["dpdk0"] {
		t.Errorf("dpdk0 was updated after its creation; all columns must be set by the insert")
	}
	mu.Unlock()
	port, err := getPort(ctxT(t), e, "dpdk0")
	if err != nil || port.Tag == nil || *port.Tag != 10 || port.ExternalIDs["role"] != "uplink" {
		t.Errorf("port dpdk0 = %+v, %v", port, err)
	}
}

func TestEnsureIsIdempotent(t *testing.T) {
	e := newEnv(t)
	tx := func() *ovsdb.Txn {
		return e.c.NewTxn(1).
			EnsureBridge(model.Bridge{Name: "br0", OtherConfig: map[string]string{"a": "1"}}, nil).
			EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Interfaces: []model.Interface{{Name: "p1", Type: "internal"}}}})
	}
	first := commit(t, tx())
	second := commit(t, tx())
	if first.Ops == 0 {
		t.Fatal("first commit sent no operations")
	}
	if second.Ops != 0 {
		t.Errorf("second identical commit sent %d operations, want 0", second.Ops)
	}
	if n := len(getBridge(t, e, "br0").Ports); n != 2 {
		t.Errorf("bridge has %d ports after two ensures, want 2", n)
	}
}

func TestEnsurePortUpdatesOwnedPort(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).
		EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsureBridge(model.Bridge{Name: "br1"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "bond0", BondMode: "active-backup",
			OtherConfig: map[string]string{"keep": "1", "drop": "1"},
			Interfaces:  []model.Interface{{Name: "e1", Options: map[string]string{"x": "1"}}, {Name: "e2"}}}}))
	// Second generation: move to br1, change bond mode, replace e2 by e3, change e1's options.
	commit(t, e.c.NewTxn(2).
		EnsurePort(ovsdb.PortOn{Bridge: "br1", Port: model.Port{Name: "bond0", BondMode: "balance-slb", Trunks: []int{10, 20},
			OtherConfig: map[string]string{"keep": "1", "new": "2"},
			Interfaces:  []model.Interface{{Name: "e1", Options: map[string]string{"x": "2"}}, {Name: "e3"}}}}))
	ctx := ctxT(t)
	eventually(t, func() string {
		port, err := getPort(ctx, e, "bond0")
		if err != nil {
			return err.Error()
		}
		if port.BondMode == nil || *port.BondMode != "balance-slb" || !slices.Equal(port.Trunks, []int{10, 20}) ||
			!maps.Equal(port.OtherConfig, map[string]string{"keep": "1", "new": "2"}) || port.ExternalIDs[ovsdb.GenerationKey] != "2" {
			return "port not updated"
		}
		if len(port.Interfaces) != 2 {
			return "port has wrong interface count"
		}
		if _, err := getIface(ctx, e, "e2"); err == nil {
			return "interface e2 still exists"
		}
		e1, err := getIface(ctx, e, "e1")
		if err != nil || e1.Options["x"] != "2" {
			return "e1 options not updated"
		}
		if _, err := getIface(ctx, e, "e3"); err != nil {
			return "e3 missing"
		}
		return ""
	})
	br0, br1 := getBridge(t, e, "br0"), getBridge(t, e, "br1")
	if len(br0.Ports) != 1 || len(br1.Ports) != 2 {
		t.Errorf("after the move br0 has %d ports (want 1), br1 has %d (want 2)", len(br0.Ports), len(br1.Ports))
	}
}

// model.Port's VLANMode and LACP land in Port.vlan_mode and Port.lacp when the port is created,
// change with it, and "" clears the column (OVS's default).
func TestEnsurePortWritesVLANModeAndLACP(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).
		EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "bond0", Tag: ptr(10), Trunks: []int{20, 30},
			VLANMode: "native-untagged", BondMode: "balance-tcp", LACP: "active",
			Interfaces: []model.Interface{{Name: "e1"}, {Name: "e2"}}}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Tag: ptr(5), VLANMode: "access"}}))
	ctx := ctxT(t)
	columns := func(name string) (vlanMode, lacp string, err error) {
		port, err := getPort(ctx, e, name)
		if err != nil {
			return "", "", err
		}
		str := func(p *string) string {
			if p == nil {
				return "<empty>"
			}
			return *p
		}
		return str(port.VLANMode), str(port.LACP), nil
	}
	want := func(name, vlanMode, lacp string) func() string {
		return func() string {
			v, l, err := columns(name)
			if err != nil {
				return err.Error()
			}
			if v != vlanMode || l != lacp {
				return fmt.Sprintf("port %s: vlan_mode %q, lacp %q; want %q, %q", name, v, l, vlanMode, lacp)
			}
			return ""
		}
	}
	eventually(t, want("bond0", "native-untagged", "active"))
	eventually(t, want("p1", "access", "<empty>"))

	commit(t, e.c.NewTxn(2).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "bond0", Trunks: []int{20, 30}, VLANMode: "trunk",
			BondMode: "balance-tcp", LACP: "passive", Interfaces: []model.Interface{{Name: "e1"}, {Name: "e2"}}}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Tag: ptr(5)}}))
	eventually(t, want("bond0", "trunk", "passive"))
	eventually(t, want("p1", "<empty>", "<empty>"))
}

// A bridge intent carries no ports: each port is an intent of its own.
func TestEnsureBridgeRefusesPorts(t *testing.T) {
	e := newEnv(t)
	_, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", Ports: []model.Port{{Name: "p1"}}}, nil).
		Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
	if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), "EnsurePort") {
		t.Fatalf("err = %v, want ErrInvalid naming EnsurePort", err)
	}
	if _, err := getPort(ctxT(t), e, "br0"); err == nil {
		t.Error("bridge br0 was created anyway")
	}
}

func TestDeletePortAndBridge(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p2"}}))
	if _, err := e.c.NewTxn(1).DeletePort("brX", "p1").Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true}); !errors.Is(err, ovsdb.ErrNotFound) {
		t.Errorf("DeletePort on the wrong bridge: err = %v, want ErrNotFound", err)
	}
	commit(t, e.c.NewTxn(1).DeletePort("br0", "p1"))
	commit(t, e.c.NewTxn(1).DeletePort("", "p1")) // absent: no-op
	ctx := ctxT(t)
	eventually(t, func() string {
		if _, err := getIface(ctx, e, "p1"); err == nil {
			return "interface p1 still there"
		}
		return ""
	})
	commit(t, e.c.NewTxn(1).DeleteBridge("br0"))
	eventually(t, func() string {
		var bridges []vswitch.Bridge
		var ports []vswitch.Port
		var ifaces []vswitch.Interface
		_ = e.foreign.List(ctx, &bridges)
		_ = e.foreign.List(ctx, &ports)
		_ = e.foreign.List(ctx, &ifaces)
		if len(bridges)+len(ports)+len(ifaces) != 0 {
			return "rows left after DeleteBridge"
		}
		return ""
	})
	if rows := e.c.Owned(); len(rows) != 0 {
		t.Errorf("Owned() after deleting everything = %v", rows)
	}
}

func TestForeignRowsAreNeverTouched(t *testing.T) {
	e := newEnv(t)
	foreignBridge(t, e, "br-int", "vm1")
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil))
	foreignAddPort(t, e, "br0", "theirs")
	getBridge(t, e, "br-int")
	eventually(t, func() string {
		if _, err := e.c.NewTxn(1).DeleteBridge("br-int").Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true}); !errors.Is(err, ovsdb.ErrNotOwned) {
			return "cache not caught up yet"
		}
		return ""
	})
	cases := []struct {
		name string
		tx   *ovsdb.Txn
		want string
	}{
		{"ensure foreign bridge", e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br-int", DatapathType: "netdev"}, nil), "br-int"},
		{"delete foreign bridge", e.c.NewTxn(1).DeleteBridge("br-int"), "br-int"},
		{"port on foreign bridge", e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br-int", Port: model.Port{Name: "mine"}}), "br-int"},
		{"update foreign port", e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br-int", Port: model.Port{Name: "vm1"}}), "br-int"},
		{"delete foreign port", e.c.NewTxn(1).DeletePort("", "vm1"), "vm1"},
		{"owned bridge holding a foreign port", e.c.NewTxn(1).DeleteBridge("br0"), "theirs"},
		{"adopt foreign port onto owned bridge", e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "theirs"}}), "theirs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.tx.Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
			if !errors.Is(err, ovsdb.ErrNotOwned) {
				t.Fatalf("err = %v, want ErrNotOwned", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
	brInt := getBridge(t, e, "br-int")
	if brInt.DatapathType != "" || len(brInt.Ports) != 1 || brInt.ExternalIDs[ovsdb.OwnerKey] != "" {
		t.Errorf("foreign bridge changed: %+v", brInt)
	}
	if n := len(getBridge(t, e, "br0").Ports); n != 2 {
		t.Errorf("br0 has %d ports, want 2 (its local port and the foreign one)", n)
	}
}

func TestAttachToForeignBridgeOnlyMutatesPorts(t *testing.T) {
	e := newEnv(t, func(c *ovsdb.Config) { c.AttachToForeignBridges = true })
	foreignBridge(t, e, "br-int", "vm1")
	before := getBridge(t, e, "br-int")
	eventually(t, func() string {
		_, err := e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br-int", Port: model.Port{Name: "mine"}}).
			Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if err != nil {
			return err.Error()
		}
		return ""
	})
	var after *vswitch.Bridge
	eventually(t, func() string {
		after = getBridge(t, e, "br-int")
		if len(after.Ports) != 2 {
			return "port not attached"
		}
		return ""
	})
	if !maps.Equal(after.ExternalIDs, before.ExternalIDs) || after.DatapathType != before.DatapathType {
		t.Errorf("foreign bridge columns changed: before %+v after %+v", before, after)
	}
	commit(t, e.c.NewTxn(1).DeletePort("br-int", "mine"))
	eventually(t, func() string {
		if len(getBridge(t, e, "br-int").Ports) != 1 {
			return "port not detached"
		}
		return ""
	})
}

func TestOwnedListsRowsWithGenerations(t *testing.T) {
	e := newEnv(t, func(c *ovsdb.Config) { c.Owner = "tenant-a" })
	foreignBridge(t, e, "br-ext", "x1")
	commit(t, e.c.NewTxn(3).EnsureBridge(model.Bridge{Name: "br0"}, nil).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}))
	commit(t, e.c.NewTxn(4).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p2"}}))
	want := []string{"Bridge/br0@3", "Interface/br0@3", "Interface/p1@3", "Interface/p2@4", "Port/br0@3", "Port/p1@3", "Port/p2@4"}
	eventually(t, func() string {
		var got []string
		for _, r := range e.c.Owned() {
			got = append(got, r.Table+"/"+r.Name+"@"+strconv.FormatInt(r.Generation, 10))
		}
		if !slices.Equal(got, want) {
			return "Owned() = " + strings.Join(got, " ") + ", want " + strings.Join(want, " ")
		}
		return ""
	})
}

// foreignAddBondIface adds, as another writer (ovs-vsctl add-bond-iface), an untagged interface
// to an existing port.
func foreignAddBondIface(t *testing.T, e *env, port, name string) {
	t.Helper()
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		ops, err := e.foreign.Create(&vswitch.Interface{UUID: "fif", Name: name, ExternalIDs: map[string]string{"who": "operator"}})
		if err != nil {
			return nil, err
		}
		p, err := getPort(ctxT(t), e, port)
		if err != nil {
			return nil, err
		}
		mut, err := e.foreign.Where(p).Mutate(p, libmodel.Mutation{Field: &p.Interfaces, Mutator: libovsdb.MutateOperationInsert, Value: []string{"fif"}})
		return append(ops, mut...), err
	})
}

func TestForeignInterfaceInOwnedPortIsNeverTouched(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "bond0", BondMode: "active-backup",
			Interfaces: []model.Interface{{Name: "e1"}, {Name: "e2"}}}}))
	eventually(t, func() string {
		if _, err := getPort(ctxT(t), e, "bond0"); err != nil {
			return "bond0 not visible to the foreign client"
		}
		return ""
	})
	foreignAddBondIface(t, e, "bond0", "ops3")
	eventually(t, func() string {
		if _, err := e.c.Interface("ops3"); err != nil {
			return "ops3 not in the cache yet"
		}
		return ""
	})
	cases := []struct {
		name string
		tx   *ovsdb.Txn
	}{
		{"re-ensure drops it", e.c.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "bond0", BondMode: "active-backup",
			Interfaces: []model.Interface{{Name: "e1"}, {Name: "e2"}}}})},
		{"re-ensure adopts it", e.c.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "bond0", BondMode: "active-backup",
			Interfaces: []model.Interface{{Name: "e1"}, {Name: "e2"}, {Name: "ops3"}}}})},
		{"delete port", e.c.NewTxn(2).DeletePort("br0", "bond0")},
		{"delete bridge", e.c.NewTxn(2).DeleteBridge("br0")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.tx.Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
			if !errors.Is(err, ovsdb.ErrNotOwned) || !strings.Contains(err.Error(), "ops3") {
				t.Fatalf("err = %v (result %+v), want ErrNotOwned naming ops3", err, res)
			}
		})
	}
	ifc, err := getIface(ctxT(t), e, "ops3")
	if err != nil || ifc.ExternalIDs["who"] != "operator" || ifc.ExternalIDs[ovsdb.OwnerKey] != "" {
		t.Errorf("foreign interface changed: %+v, %v", ifc, err)
	}
}

func TestOwnedPortIsNotMovedOffAForeignBridge(t *testing.T) {
	e := newEnv(t, func(c *ovsdb.Config) { c.AttachToForeignBridges = true })
	foreignBridge(t, e, "br-int")
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil))
	eventually(t, func() string {
		_, err := e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br-int", Port: model.Port{Name: "p1"}}).Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if err != nil {
			return "attaching p1 to br-int: " + err.Error()
		}
		return ""
	})
	// The same client, without permission to touch foreign bridges, must not detach p1 from br-int.
	strict := newClient(t, e, ovsdb.Config{})
	_, err := strict.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}).Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
	if !errors.Is(err, ovsdb.ErrNotOwned) || !strings.Contains(err.Error(), "br-int") {
		t.Fatalf("moving a port off a foreign bridge: err = %v, want ErrNotOwned naming br-int", err)
	}
	if n := len(getBridge(t, e, "br-int").Ports); n != 1 {
		t.Errorf("br-int has %d ports, want 1 (p1 still there)", n)
	}
}

func TestBridgeDeletedAndRecreatedInOneTransaction(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}))
	old := getBridge(t, e, "br0")
	commit(t, e.c.NewTxn(2).DeleteBridge("br0").EnsureBridge(model.Bridge{Name: "br0", DatapathType: "netdev"}, nil))
	eventually(t, func() string {
		br := getBridge(t, e, "br0")
		if br.UUID == old.UUID || br.DatapathType != "netdev" || len(br.Ports) != 1 {
			return "bridge not recreated fresh (new row, netdev, only its local port)"
		}
		if _, err := getPort(ctxT(t), e, "p1"); err == nil {
			return "port p1 of the deleted bridge survived"
		}
		return ""
	})
}
