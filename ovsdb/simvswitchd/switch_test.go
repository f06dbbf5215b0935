package simvswitchd_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// env is a server, a simulated ovs-vswitchd and a client, all closed by cleanup.
type env struct {
	srv *ovsdbtest.Server
	sw  *simvswitchd.Switch
	c   client.Client
}

func newEnv(t *testing.T, opts ...simvswitchd.Option) *env {
	t.Helper()
	s := ovsdbtest.Start(t)
	return &env{srv: s, sw: ovsdbtest.StartOVSVswitchd(t, s, opts...), c: s.Client(t)}
}

// wantIface checks an interface after the simulator acknowledged.
type wantIface struct {
	ofport int    // -1 for failed; 0 means "any valid ofport"
	err    string // substring of Interface.error; "" means no error
	link   string // expected link_state if not ""
}

func checkIface(t *testing.T, c client.Client, name string, want wantIface) *vswitch.Interface {
	t.Helper()
	iface, err := ovsdbtest.InterfaceByName(c, name)
	if err != nil {
		t.Fatal(err)
	}
	gotErr := deref(iface.Error)
	switch {
	case want.err == "" && gotErr != "":
		t.Errorf("%s: unexpected error %q", name, gotErr)
	case want.err != "" && !strings.Contains(gotErr, want.err):
		t.Errorf("%s: error %q, want it to contain %q", name, gotErr, want.err)
	}
	ofport := deref(iface.Ofport)
	switch {
	case want.ofport == 0 && !validOfport(ofport):
		t.Errorf("%s: ofport %d, want a valid one", name, ofport)
	case want.ofport != 0 && ofport != want.ofport:
		t.Errorf("%s: ofport %d, want %d", name, ofport, want.ofport)
	}
	if want.link != "" && deref(iface.LinkState) != want.link {
		t.Errorf("%s: link_state %v, want %s", name, iface.LinkState, want.link)
	}
	if want.err == "" {
		if deref(iface.AdminState) != "up" || iface.MACInUse == nil || len(iface.Statistics) != 4 {
			t.Errorf("%s: admin_state %v mac_in_use %v statistics %v", name, iface.AdminState, iface.MACInUse, iface.Statistics)
		}
	} else if iface.MACInUse != nil || iface.LinkState != nil || len(iface.Statistics) != 0 {
		t.Errorf("%s: failed interface keeps status columns: %+v", name, iface)
	}
	return iface
}

func TestInterfaces(t *testing.T) {
	t.Parallel()
	devargs := func(d string) map[string]string { return map[string]string{"dpdk-devargs": d} }
	tests := []struct {
		name   string
		opts   []simvswitchd.Option
		dpType string
		ports  []ovsdbtest.PortSpec
		want   map[string]wantIface
	}{
		{"dpdk with PCI devargs", nil, "netdev",
			[]ovsdbtest.PortSpec{{Name: "dpdk0", Type: "dpdk", Options: devargs("0000:01:00.0")}},
			map[string]wantIface{"dpdk0": {link: "up"}, "br0": {ofport: simvswitchd.OFPPLocal}}},
		{"dpdk with vdev devargs", nil, "netdev",
			[]ovsdbtest.PortSpec{{Name: "dpdk0", Type: "dpdk", Options: devargs("net_tap0,iface=tap0")}},
			map[string]wantIface{"dpdk0": {}}},
		{"dpdk with bad devargs", nil, "netdev",
			[]ovsdbtest.PortSpec{{Name: "dpdk0", Type: "dpdk", Options: devargs("net_bogus0")}},
			map[string]wantIface{"dpdk0": {ofport: -1, err: "Error attaching device 'net_bogus0' to DPDK"}}},
		{"dpdk without devargs", nil, "netdev",
			[]ovsdbtest.PortSpec{{Name: "dpdk0", Type: "dpdk"}},
			map[string]wantIface{"dpdk0": {ofport: -1, err: "'dpdk0' is missing 'options:dpdk-devargs'"}}},
		{"dpdk devargs policy option", []simvswitchd.Option{simvswitchd.WithDevargs(simvswitchd.DevargsPolicy{Prefixes: []string{"net_bogus"}})}, "netdev",
			[]ovsdbtest.PortSpec{{Name: "a", Type: "dpdk", Options: devargs("net_bogus0")}, {Name: "b", Type: "dpdk", Options: devargs("0000:01:00.0")}},
			map[string]wantIface{"a": {}, "b": {ofport: -1, err: "Error attaching device '0000:01:00.0' to DPDK"}}},
		{"two interfaces with the same devargs", nil, "netdev",
			[]ovsdbtest.PortSpec{{Name: "a", Type: "dpdk", Options: devargs("0000:01:00.0")}, {Name: "b", Type: "dpdk", Options: devargs("0000:01:00.0")}},
			map[string]wantIface{"a": {}, "b": {ofport: -1, err: "'b' is trying to use device '0000:01:00.0' which is already in use by 'a'"}}},
		{"dpdk on the kernel datapath", nil, "system",
			[]ovsdbtest.PortSpec{{Name: "dpdk0", Type: "dpdk", Options: devargs("0000:01:00.0")}},
			map[string]wantIface{"dpdk0": {ofport: -1, err: "could not add network device dpdk0 to ofproto (Invalid argument)"}}},
		{"dpdk before dpdk-init", []simvswitchd.Option{simvswitchd.WithRequireDPDKInit()}, "netdev",
			[]ovsdbtest.PortSpec{{Name: "dpdk0", Type: "dpdk", Options: devargs("0000:01:00.0")}},
			map[string]wantIface{"dpdk0": {ofport: -1, err: "could not open network device dpdk0 (Address family not supported by protocol)"}}},
		{"unknown type", nil, "",
			[]ovsdbtest.PortSpec{{Name: "x0", Type: "bogus"}},
			map[string]wantIface{"x0": {ofport: -1, err: "could not open network device x0 (Address family not supported by protocol)"}}},
		{"missing kernel device", []simvswitchd.Option{simvswitchd.WithSystemDevice(func(n string) bool { return n != "eth9" })}, "",
			[]ovsdbtest.PortSpec{{Name: "eth9"}, {Name: "eth0"}},
			map[string]wantIface{"eth9": {ofport: -1, err: "could not open network device eth9 (No such device)"}, "eth0": {}}},
		{"ofport_request honoured", nil, "",
			[]ovsdbtest.PortSpec{{Name: "a", Type: "internal", OfportRequest: new(42)}, {Name: "b", Type: "internal"}},
			map[string]wantIface{"a": {ofport: 42}, "b": {ofport: 1}}},
		{"conflicting ofport_request", nil, "",
			[]ovsdbtest.PortSpec{{Name: "a", Type: "internal", OfportRequest: new(7)}, {Name: "b", Type: "internal", OfportRequest: new(7)}},
			map[string]wantIface{"a": {ofport: 7}, "b": {ofport: 1}}},
		{"patch pair", nil, "",
			[]ovsdbtest.PortSpec{{Name: "pa", Type: "patch", Options: map[string]string{"peer": "pb"}}, {Name: "pb", Type: "patch", Options: map[string]string{"peer": "pa"}}},
			map[string]wantIface{"pa": {link: "up"}, "pb": {link: "up"}}},
		{"patch without peer", nil, "",
			[]ovsdbtest.PortSpec{{Name: "pa", Type: "patch"}},
			map[string]wantIface{"pa": {ofport: -1, err: "pa: patch type requires valid 'peer' argument"}}},
		{"vxlan without remote_ip", nil, "",
			[]ovsdbtest.PortSpec{{Name: "vx0", Type: "vxlan"}, {Name: "vx1", Type: "vxlan", Options: map[string]string{"remote_ip": "192.0.2.1"}}},
			map[string]wantIface{"vx0": {ofport: -1, err: "vx0: vxlan type requires valid 'remote_ip' argument"}, "vx1": {}}},
		{"vhost-user client without a guest", nil, "netdev",
			[]ovsdbtest.PortSpec{{Name: "vhu0", Type: "dpdkvhostuserclient", Options: map[string]string{"vhost-server-path": "/tmp/vhu0"}}},
			map[string]wantIface{"vhu0": {link: "down"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.opts...)
			ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.CreateBridgeOps(t, e.c, ovsdbtest.BridgeSpec{Name: "br0", DatapathType: tt.dpType, Ports: tt.ports})...)
			for name, want := range tt.want {
				checkIface(t, e.c, name, want)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	t.Run("removing a port frees its ofport", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.CreateBridgeOps(t, e.c, ovsdbtest.BridgeSpec{Name: "br0", Ports: []ovsdbtest.PortSpec{{Name: "a", Type: "internal"}, {Name: "b", Type: "internal"}}})...)
		freed := deref(checkIface(t, e.c, "a", wantIface{}).Ofport)
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.DelPortOps(t, e.c, "br0", "a")...)
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.AddPortOps(t, e.c, "br0", ovsdbtest.PortSpec{Name: "c", Type: "internal"})...)
		if got := deref(checkIface(t, e.c, "c", wantIface{}).Ofport); got == freed {
			t.Errorf("new port got just-freed ofport %d; ofproto hands out unused numbers first", got)
		}
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.AddPortOps(t, e.c, "br0", ovsdbtest.PortSpec{Name: "d", Type: "internal", OfportRequest: new(freed)})...)
		checkIface(t, e.c, "d", wantIface{ofport: freed})
	})
	t.Run("fixing an interface clears its error", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.CreateBridgeOps(t, e.c, ovsdbtest.BridgeSpec{Name: "br0", DatapathType: "netdev",
			Ports: []ovsdbtest.PortSpec{{Name: "dpdk0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "bad"}}}})...)
		checkIface(t, e.c, "dpdk0", wantIface{ofport: -1, err: "Error attaching device 'bad'"})
		iface := &vswitch.Interface{Options: map[string]string{"dpdk-devargs": "0000:02:00.0"}}
		ops := ovsdbtest.Must[[]ovsdb.Operation](t)(e.c.Where(&vswitch.Interface{Name: "dpdk0"}).Update(iface, &iface.Options))
		ovsdbtest.ApplyAndWait(t, e.c, append(ops, ovsdbtest.BumpNextCfg(t, e.c)...)...)
		checkIface(t, e.c, "dpdk0", wantIface{link: "up"})
	})
	t.Run("dpdk-init sets dpdk_initialized", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, simvswitchd.WithRequireDPDKInit())
		ovs := ovsdbtest.Must[*vswitch.OpenvSwitch](t)(ovsdbtest.OpenvSwitchRow(e.c))
		ops := ovsdbtest.Must[[]ovsdb.Operation](t)(e.c.Where(ovs).Mutate(ovs, model.Mutation{Field: &ovs.OtherConfig, Mutator: ovsdb.MutateOperationInsert, Value: map[string]string{"dpdk-init": "true"}}))
		ovsdbtest.ApplyAndWait(t, e.c, append(ops, ovsdbtest.BumpNextCfg(t, e.c)...)...)
		if ovs := ovsdbtest.Must[*vswitch.OpenvSwitch](t)(ovsdbtest.OpenvSwitchRow(e.c)); !ovs.DpdkInitialized || deref(ovs.DpdkVersion) != simvswitchd.DefaultDPDKVersion {
			t.Fatalf("dpdk_initialized %v dpdk_version %v", ovs.DpdkInitialized, ovs.DpdkVersion)
		}
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.CreateBridgeOps(t, e.c, ovsdbtest.BridgeSpec{Name: "br0", DatapathType: "netdev",
			Ports: []ovsdbtest.PortSpec{{Name: "dpdk0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:01:00.0"}}}})...)
		checkIface(t, e.c, "dpdk0", wantIface{})
	})
	t.Run("paused acknowledgement", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.sw.PauseAck()
		ovsdbtest.MustTransact(t, e.c, ovsdbtest.CreateBridgeOps(t, e.c, ovsdbtest.BridgeSpec{Name: "br0", Ports: []ovsdbtest.PortSpec{{Name: "a", Type: "internal"}}})...)
		ovsdbtest.WaitFor(t, "ofport assigned while acknowledgement is paused", func() error {
			iface, err := ovsdbtest.InterfaceByName(e.c, "a")
			if err == nil && !validOfport(deref(iface.Ofport)) {
				err = fmt.Errorf("ofport %v", iface.Ofport)
			}
			return err
		})
		// The pass that assigned the ofport is the one that would have
		// acknowledged, so cur_cfg must still lag.
		if ovs := ovsdbtest.Must[*vswitch.OpenvSwitch](t)(ovsdbtest.OpenvSwitchRow(e.c)); ovs.CurCfg >= ovs.NextCfg {
			t.Fatalf("cur_cfg %d acknowledged next_cfg %d while paused", ovs.CurCfg, ovs.NextCfg)
		}
		e.sw.ResumeAck()
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.BumpNextCfg(t, e.c)...)
	})
	t.Run("pause and resume", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.sw.Pause()
		ovsdbtest.MustTransact(t, e.c, ovsdbtest.CreateBridgeOps(t, e.c, ovsdbtest.BridgeSpec{Name: "br0"})...)
		e.sw.Resume()
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.BumpNextCfg(t, e.c)...)
		checkIface(t, e.c, "br0", wantIface{ofport: simvswitchd.OFPPLocal})
	})
	t.Run("waits for the Open_vSwitch row", func(t *testing.T) {
		t.Parallel()
		s := ovsdbtest.Start(t, ovsdbtest.WithoutInit())
		ovsdbtest.StartOVSVswitchd(t, s)
		c := s.Client(t)
		row := &vswitch.OpenvSwitch{NextCfg: 3, IfaceTypes: simvswitchd.DefaultIfaceTypes()}
		ovsdbtest.MustTransact(t, c, ovsdbtest.Must[[]ovsdb.Operation](t)(c.Create(row))...)
		ovsdbtest.WaitFor(t, "cur_cfg acknowledged", func() error {
			ovs, err := ovsdbtest.OpenvSwitchRow(c)
			if err == nil && ovs.CurCfg != 3 {
				err = fmt.Errorf("cur_cfg %d", ovs.CurCfg)
			}
			return err
		})
	})
	t.Run("reconfiguration hook and counter", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var seen []simvswitchd.Reconfiguration
		e := newEnv(t, simvswitchd.WithOnReconfigure(func(r simvswitchd.Reconfiguration) {
			mu.Lock()
			seen = append(seen, r)
			mu.Unlock()
		}))
		ovsdbtest.ApplyAndWait(t, e.c, ovsdbtest.CreateBridgeOps(t, e.c, ovsdbtest.BridgeSpec{Name: "br0", Ports: []ovsdbtest.PortSpec{{Name: "x", Type: "bogus"}}})...)
		// The hook runs after the server replied, so it may trail what
		// clients already see.
		ovsdbtest.WaitFor(t, "hook reports the failed interface", func() error {
			mu.Lock()
			defer mu.Unlock()
			for i, r := range seen {
				if r.Seq != i+1 {
					return fmt.Errorf("reconfiguration %d has Seq %d", i, r.Seq)
				}
				if r.Acked && strings.Contains(r.Errors["x"], "Address family not supported") {
					if n := e.sw.Reconfigurations(); n < r.Seq {
						return fmt.Errorf("counter %d behind hook %d", n, r.Seq)
					}
					return nil
				}
			}
			return fmt.Errorf("hook saw %+v", seen)
		})
	})
}

func TestRestart(t *testing.T) {
	t.Parallel()
	s := ovsdbtest.Start(t)
	v := ovsdbtest.StartOVSVswitchd(t, s)
	c := s.Client(t, ovsdbtest.ReconnectOption(10*time.Millisecond))
	ovsdbtest.ApplyAndWait(t, c, ovsdbtest.CreateBridgeOps(t, c, ovsdbtest.BridgeSpec{Name: "br0", Ports: []ovsdbtest.PortSpec{{Name: "a", Type: "internal", OfportRequest: new(5)}}})...)
	before := v.Reconfigurations()

	s.Restart(t)

	t.Run("a new client sees the data", func(t *testing.T) {
		fresh := s.Client(t)
		checkIface(t, fresh, "a", wantIface{ofport: 5})
	})
	t.Run("the reconnecting client sees the data", func(t *testing.T) {
		ovsdbtest.WaitFor(t, "client reconnected", func() error {
			if !c.Connected() {
				return fmt.Errorf("not connected")
			}
			_, err := ovsdbtest.InterfaceByName(c, "a")
			return err
		})
		checkIface(t, c, "a", wantIface{ofport: 5})
	})
	t.Run("the simulator reconnects and keeps working", func(t *testing.T) {
		ovsdbtest.ApplyAndWait(t, c, ovsdbtest.AddPortOps(t, c, "br0", ovsdbtest.PortSpec{Name: "b", Type: "internal"})...)
		checkIface(t, c, "b", wantIface{})
		ovsdbtest.WaitFor(t, "reconfiguration counted after restart", func() error {
			if n := v.Reconfigurations(); n <= before {
				return fmt.Errorf("%d reconfigurations, %d before restart", n, before)
			}
			return nil
		})
	})
	t.Run("stop refuses connections until serve", func(t *testing.T) {
		s.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), ovsdbtest.DialTimeout)
		defer cancel()
		if fresh, err := ovsdbtest.Dial(ctx, s.Endpoint()); err == nil {
			fresh.Close()
			t.Fatal("connected to a stopped server")
		}
		if err := s.Serve(ctx); err != nil {
			t.Fatal(err)
		}
		checkIface(t, s.Client(t), "b", wantIface{})
	})
}

// validOfport reports whether p is an ofport a regular interface can have.
func validOfport(p int) bool { return p >= 1 && p <= simvswitchd.OFPPMax }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
