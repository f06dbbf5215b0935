//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

func dial(t *testing.T, db *lab.OVSDB) *ovsdb.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{db.Endpoint},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatalf("Dial %s: %v", db.Endpoint, err)
	}
	t.Cleanup(c.Close)
	return c
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestDPDKBridgeCarriesTraffic builds, through package ovsdb only, an OVS-DPDK bridge with two
// af_packet "NICs" (veths whose other ends sit in two namespaces) and a vhost-user port, then
// sends ping and a TCP stream from one namespace to the other through it. A port with a bad
// dpdk-devargs must come back as an error naming the interface with ovs-vswitchd's message,
// without disturbing the others.
func TestDPDKBridgeCarriesTraffic(t *testing.T) {
	lab.Require(t, lab.NeedDPDK, lab.NeedTraffic)
	db := lab.StartOVSDB(t)
	vs := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK})
	c := dial(t, db)

	ns1, ns2 := lab.NewNetns(t), lab.NewNetns(t)
	v1 := lab.NewVethPair(t, lab.VethSpec{ANetns: ns1, AAddr: "10.99.0.1/24", DisableOffloads: true})
	v2 := lab.NewVethPair(t, lab.VethSpec{ANetns: ns2, AAddr: "10.99.0.2/24", DisableOffloads: true})
	vhostSock := filepath.Join(db.Dir, "vhu0.sock")

	// The lab set the DPDK keys (dpdk-init, pmd-maxsleep…) with ovs-vsctl: they are not ours to
	// change, and the client says so without writing anything.
	if _, err := c.NewTxn(1).SetGlobal(map[string]string{ovsdb.PMDMaxSleep: "500"}).
		Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{}); !errors.Is(err, ovsdb.ErrNotOwned) {
		t.Errorf("SetGlobal of the lab's pmd-maxsleep: err = %v, want ErrNotOwned", err)
	}
	res, err := c.NewTxn(1).
		SetGlobal(map[string]string{"emc-insert-inv-prob": "50"}).
		EnsureBridge(model.Bridge{Name: "br-dpdk", DatapathType: "netdev"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br-dpdk", Port: model.Port{Name: "nic1", Interfaces: []model.Interface{{
			Name: "nic1", Type: "dpdk", Options: map[string]string{"dpdk-devargs": vs.AFPacketDevargs(v1.B.Name)}}}}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br-dpdk", Port: model.Port{Name: "nic2", Interfaces: []model.Interface{{
			Name: "nic2", Type: "dpdk", Options: map[string]string{"dpdk-devargs": vs.AFPacketDevargs(v2.B.Name)}}}}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br-dpdk", Port: model.Port{Name: "vhu0", Interfaces: []model.Interface{{
			Name: "vhu0", Type: "dpdkvhostuserclient", Options: map[string]string{"vhost-server-path": vhostSock}}}}}).
		Commit(timeout(t, 60*time.Second), ovsdb.CommitOptions{})
	if err != nil {
		t.Fatalf("building the DPDK bridge: %v", err)
	}
	for _, st := range res.Interfaces {
		t.Logf("interface %s: type=%s ofport=%d link=%s error=%q", st.Name, st.Type, st.Ofport, st.LinkState, st.Error)
		if st.Ofport < 1 || st.Error != "" {
			t.Errorf("interface %s not set up by ovs-vswitchd: ofport %d, error %q", st.Name, st.Ofport, st.Error)
		}
	}
	if len(res.Interfaces) != 4 {
		t.Errorf("acknowledged %d interfaces, want 4 (br-dpdk, nic1, nic2, vhu0)", len(res.Interfaces))
	}

	ctx := timeout(t, 60*time.Second)
	ping, err := lab.Ping(ctx, ns1, "10.99.0.2", 5)
	if err != nil {
		t.Fatalf("ping through the DPDK bridge: %v", err)
	}
	t.Logf("ping: %d/%d received, avg rtt %s", ping.Received, ping.Transmitted, ping.AvgRTT)
	const size = 32 << 20
	tr, err := lab.TCPTransfer(ctx, ns1, ns2, "10.99.0.2", size)
	if err != nil {
		t.Fatalf("TCP transfer through the DPDK bridge: %v", err)
	}
	t.Logf("TCP transfer: %+v", tr)

	// A bad device: the transaction commits, ovs-vswitchd refuses the interface, and the caller
	// learns which one and why.
	res, err = c.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br-dpdk", Port: model.Port{Name: "bad0", Interfaces: []model.Interface{{
		Name: "bad0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": vs.AFPacketDevargs("ovlnosuchdev")}}}}}).
		Commit(timeout(t, 60*time.Second), ovsdb.CommitOptions{})
	var ae *ovsdb.ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("bad dpdk-devargs: err = %v, want *ovsdb.ApplyError", err)
	}
	if len(ae.Interfaces) != 1 || ae.Interfaces[0].Interface != "bad0" ||
		!strings.Contains(ae.Interfaces[0].Message, "Error attaching device") {
		t.Errorf("ApplyError = %+v, want bad0 with ovs-vswitchd's 'Error attaching device' message", ae.Interfaces)
	}
	t.Logf("bad port reported as: %v", err)
	if res == nil || len(res.Interfaces) != 1 || res.Interfaces[0].Ofport != -1 {
		t.Errorf("bad0 result = %+v, want ofport -1", res)
	}
	// The working ports are unaffected.
	if _, err := lab.Ping(timeout(t, 30*time.Second), ns1, "10.99.0.2", 2); err != nil {
		t.Errorf("ping after adding a broken port: %v", err)
	}
	// And everything is ours to remove, in one transaction.
	if _, err := c.NewTxn(3).DeleteBridge("br-dpdk").UnsetGlobal("emc-insert-inv-prob").
		Commit(timeout(t, 60*time.Second), ovsdb.CommitOptions{}); err != nil {
		t.Errorf("deleting the bridge: %v", err)
	}
	if out := db.Vsctl(t, "list-br"); strings.TrimSpace(out) != "" {
		t.Errorf("bridges left after DeleteBridge: %q", out)
	}
}

// TestConcurrentOvsVsctlWriterLosesNothing runs ovs-vsctl add-port in a loop on the same bridge
// while the client adds its own ports one transaction at a time: every port of both writers
// must end up on the bridge, and ovs-vsctl's rows must be exactly as ovs-vsctl wrote them.
func TestConcurrentOvsVsctlWriterLosesNothing(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	c := dial(t, db)
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 25
	var wg sync.WaitGroup
	vsctlErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			name := fmt.Sprintf("vs%d", i)
			_, stderr, err := db.VsctlErr(t.Context(), "--no-wait", "add-port", "br0", name,
				"--", "set", "Interface", name, "external_ids:made-by=ovs-vsctl")
			if err != nil {
				vsctlErr <- fmt.Errorf("ovs-vsctl add-port %s: %v: %s", name, err, stderr)
				return
			}
		}
	}()
	// Make sure the two writers really overlap: start ours once ovs-vsctl is under way, and pace
	// ours to ovs-vsctl's speed (one process per port) so both run over the same period.
	lab.WaitFor(t, 30*time.Second, "ovs-vsctl to start adding ports", func(context.Context) error {
		if len(strings.Fields(db.Vsctl(t, "list-ports", "br0"))) < 2 {
			return errors.New("fewer than 2 ports yet")
		}
		return nil
	})
	retried := 0
	for i := range n {
		name := fmt.Sprintf("ours%d", i)
		res, err := c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: name}}).
			Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{NoWait: true})
		if err != nil {
			t.Fatalf("EnsurePort %s: %v", name, err)
		}
		if res.Attempts > 1 {
			retried++
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d of our %d commits were retried after a concurrent change", retried, n)
	wg.Wait()
	select {
	case err := <-vsctlErr:
		t.Fatal(err)
	default:
	}
	ports := strings.Fields(db.Vsctl(t, "list-ports", "br0"))
	if len(ports) != 2*n {
		t.Fatalf("bridge has %d ports, want %d: %v", len(ports), 2*n, ports)
	}
	for i := range n {
		name := fmt.Sprintf("vs%d", i)
		if got := db.Get(t, "Interface", name, "external_ids"); got != `{made-by=ovs-vsctl}` {
			t.Errorf("ovs-vsctl's interface %s external_ids = %s, want it untouched", name, got)
		}
		if got := db.Get(t, "Port", name, "external_ids"); got != "{}" {
			t.Errorf("ovs-vsctl's port %s external_ids = %s, want it untouched", name, got)
		}
	}
	// Re-ensuring our ports (a reconcile) changes nothing, and deleting the bridge is refused
	// because ovs-vsctl's ports are on it.
	tx := c.NewTxn(1)
	for i := range n {
		tx.EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("ours%d", i)}})
	}
	res, err := tx.Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{NoWait: true})
	if err != nil {
		t.Errorf("re-ensuring unchanged ports: %v", err)
	} else if res.Ops != 0 {
		t.Errorf("re-ensuring unchanged ports sent %d operations, want 0", res.Ops)
	}
	if _, err := c.NewTxn(1).DeleteBridge("br0").Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{}); !errors.Is(err, ovsdb.ErrNotOwned) {
		t.Errorf("DeleteBridge with foreign ports on it: err = %v, want ErrNotOwned", err)
	}
	if got := len(strings.Fields(db.Vsctl(t, "list-ports", "br0"))); got != 2*n {
		t.Errorf("after the refused delete the bridge has %d ports, want %d", got, 2*n)
	}
}

// TestClientSurvivesOvsdbServerRestart restarts ovsdb-server under a connected client: the client
// must reconnect by itself, its cache must show what changed while it was away, and waited
// transactions must work again once ovs-vswitchd has reconnected too.
func TestClientSurvivesOvsdbServerRestart(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	c := dial(t, db)
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}).
		Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	db.Vsctl(t, "--no-wait", "add-port", "br0", "gone")
	lab.WaitFor(t, 20*time.Second, "client to see port gone", func(context.Context) error {
		_, err := c.Interface("gone")
		return err
	})
	db.Stop(t)
	lab.WaitFor(t, 20*time.Second, "client to notice the disconnection", func(context.Context) error {
		if c.Connected() {
			return errors.New("still connected")
		}
		return nil
	})
	db.Start(t)
	// Another writer changes things right after the restart: adds a port, edits ours, and
	// removes one that existed before the restart (the cache must forget it).
	db.Vsctl(t, "--no-wait", "add-port", "br0", "theirs", "--", "set", "Interface", "theirs", "external_ids:x=y")
	db.Vsctl(t, "--no-wait", "del-port", "br0", "gone")
	db.Vsctl(t, "--no-wait", "set", "Interface", "p1", "other_config:note=set-by-operator")
	lab.WaitFor(t, 30*time.Second, "client to reconnect and resynchronise", func(context.Context) error {
		if !c.Connected() {
			return errors.New("not reconnected")
		}
		if _, err := c.Interface("theirs"); err != nil {
			return fmt.Errorf("cache lacks the port added during the restart: %w", err)
		}
		if _, err := c.Interface("gone"); err == nil {
			return errors.New("cache still shows the port deleted after the restart")
		}
		return nil
	})
	if got := len(c.Owned()); got != 5 {
		t.Errorf("owned rows after reconnect = %d, want 5 (br0 bridge, 2 ports, 2 interfaces)", got)
	}
	res, err := c.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p2"}}).
		Commit(timeout(t, 60*time.Second), ovsdb.CommitOptions{})
	if err != nil {
		t.Fatalf("waited commit after restart: %v", err)
	}
	if len(res.Interfaces) != 1 || res.Interfaces[0].Ofport < 1 {
		t.Errorf("p2 after restart = %+v, want an ofport from ovs-vswitchd", res.Interfaces)
	}
	// The operator's key on our interface is drift: re-ensuring p1 as desired removes it, and
	// their port is untouched.
	if _, err := c.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}).
		Commit(timeout(t, 30*time.Second), ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := db.Get(t, "Interface", "p1", "other_config"); got != "{}" {
		t.Errorf("p1 other_config after re-ensure = %s, want {}", got)
	}
	if got := db.Get(t, "Interface", "theirs", "external_ids"); got != "{x=y}" {
		t.Errorf("foreign interface external_ids = %s, want {x=y}", got)
	}
}
