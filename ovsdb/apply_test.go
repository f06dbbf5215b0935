package ovsdb_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
)

func TestCommitWaitsForVswitchdAndReportsOfports(t *testing.T) {
	e := newEnv(t)
	ovsdbtest.StartOVSVswitchd(t, e.srv)
	res, err := e.c.NewTxn(1).
		EnsureBridge(model.Bridge{Name: "br0", DatapathType: "netdev"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "dpdk0", Interfaces: []model.Interface{{
			Name: "dpdk0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "net_af_packet0,iface=veth0"}}}}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "vhu0", Interfaces: []model.Interface{{
			Name: "vhu0", Type: "dpdkvhostuserclient", OFPortRequest: ptr(42),
			Options: map[string]string{"vhost-server-path": "/tmp/vhu0.sock"}}}}}).
		Commit(ctxT(t), ovsdb.CommitOptions{})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if res.NextCfg <= 0 {
		t.Errorf("NextCfg = %d, want > 0", res.NextCfg)
	}
	if e.c.CurCfg() < res.NextCfg {
		t.Errorf("Commit returned before cur_cfg (%d) reached next_cfg (%d)", e.c.CurCfg(), res.NextCfg)
	}
	got := map[string]ovsdb.InterfaceState{}
	for _, st := range res.Interfaces {
		got[st.Name] = st
	}
	if len(got) != 3 {
		t.Fatalf("reported %d interfaces (%v), want br0, dpdk0, vhu0", len(got), res.Interfaces)
	}
	if got["br0"].Ofport != 65534 {
		t.Errorf("bridge-local port ofport = %d, want 65534", got["br0"].Ofport)
	}
	if got["vhu0"].Ofport != 42 {
		t.Errorf("vhu0 ofport = %d, want the requested 42", got["vhu0"].Ofport)
	}
	if got["dpdk0"].Ofport < 1 || got["dpdk0"].Error != "" {
		t.Errorf("dpdk0 = %+v, want an ofport and no error", got["dpdk0"])
	}
}

func TestVswitchdErrorsComeBackPerInterface(t *testing.T) {
	e := newEnv(t)
	ovsdbtest.StartOVSVswitchd(t, e.srv)
	res, err := e.c.NewTxn(1).
		EnsureBridge(model.Bridge{Name: "br0", DatapathType: "netdev"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "good", Interfaces: []model.Interface{{Name: "good", Type: "internal"}}}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "bad", Interfaces: []model.Interface{{
			Name: "bad", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "nonsense"}}}}}).
		Commit(ctxT(t), ovsdb.CommitOptions{})
	var ae *ovsdb.ApplyError
	if !errors.As(err, &ae) || !errors.Is(err, ovsdb.ErrVswitchd) {
		t.Fatalf("err = %v, want *ApplyError", err)
	}
	if len(ae.Interfaces) != 1 || ae.Interfaces[0].Interface != "bad" || ae.Interfaces[0].Message == "" {
		t.Errorf("ApplyError = %+v, want exactly interface bad with vswitchd's message", ae.Interfaces)
	}
	if !strings.Contains(err.Error(), "bad") || !strings.Contains(err.Error(), "nonsense") {
		t.Errorf("error %q should name the interface and carry vswitchd's message", err)
	}
	if res == nil {
		t.Fatal("Result must be returned along with an ApplyError")
	}
	for _, st := range res.Interfaces {
		if st.Name == "good" && (st.Ofport < 1 || st.Error != "") {
			t.Errorf("good interface = %+v: a failing neighbour must not fail it", st)
		}
		if st.Name == "bad" && st.Ofport != -1 {
			t.Errorf("bad interface ofport = %d, want -1", st.Ofport)
		}
	}
	// Fixing the options clears the error.
	_, err = e.c.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "bad", Interfaces: []model.Interface{{
		Name: "bad", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "net_af_packet1,iface=veth1"}}}}}).
		Commit(ctxT(t), ovsdb.CommitOptions{})
	if err != nil {
		t.Errorf("after fixing dpdk-devargs: %v", err)
	}
}

func TestWaitAppliedTimeoutAndCancel(t *testing.T) {
	e := newEnv(t)
	sim := ovsdbtest.StartOVSVswitchd(t, e.srv)
	sim.PauseAck()
	tx := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil)

	// ApplyTimeout bounds only the wait for ovs-vswitchd: a deadline on ctx could also end
	// the transact on a loaded machine, before the wait this test is about.
	_, err := tx.Commit(ctxT(t), ovsdb.CommitOptions{ApplyTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ovsdb.ErrTimeout) {
		t.Fatalf("stuck vswitchd: err = %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "ovs-vswitchd") {
		t.Errorf("timeout error %q should say what it waited for", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.c.WaitApplied(ctx2, e.c.CurCfg()+100)
		done <- err
	}()
	cancel2()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || errors.Is(err, ovsdb.ErrTimeout) {
			t.Errorf("cancelled wait: err = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitApplied ignored cancellation")
	}

	// Once ovs-vswitchd catches up, the same configuration is acknowledged.
	sim.ResumeAck()
	if _, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctxT(t), ovsdb.CommitOptions{}); err != nil {
		t.Errorf("after resume: %v", err)
	}
}

// reconnectCounter is an Observer counting reconnection attempts per connection.
type reconnectCounter struct{ transactions, monitor atomic.Int32 }

func (o *reconnectCounter) Transacted(time.Duration, int, error) {}
func (o *reconnectCounter) Reconnecting()                        { o.transactions.Add(1) }
func (o *reconnectCounter) MonitorReconnecting()                 { o.monitor.Add(1) }

func TestClientSurvivesServerRestart(t *testing.T) {
	obs := &reconnectCounter{}
	e := newEnv(t, func(c *ovsdb.Config) { c.Observer = obs })
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil))
	if n, m := obs.transactions.Load(), obs.monitor.Load(); n != 0 || m != 0 {
		t.Fatalf("%d + %d reconnection attempts before the restart", n, m)
	}
	e.srv.Restart(t)
	eventually(t, func() string {
		if !e.c.Connected() {
			return "client did not reconnect"
		}
		return ""
	})
	// Both connections were lost with the server, and the Observer heard of each one's retries.
	if obs.transactions.Load() == 0 || obs.monitor.Load() == 0 {
		t.Errorf("reconnection attempts seen: %d on the transactions' connection, %d on the monitor's; want both > 0",
			obs.transactions.Load(), obs.monitor.Load())
	}
	res := commit(t, e.c.NewTxn(2).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}))
	if res.Ops == 0 {
		t.Error("no operations sent after reconnect")
	}
	eventually(t, func() string {
		if _, err := e.c.Interface("p1"); err != nil {
			return "cache after reconnect lacks p1: " + err.Error()
		}
		owned := e.c.Owned()
		if len(owned) != 5 { // bridge, 2 ports, 2 interfaces
			return "owned rows after reconnect: wrong count"
		}
		return ""
	})
}

func TestCommitWhileDisconnectedFailsWithNotConnected(t *testing.T) {
	e := newEnv(t)
	e.srv.Stop()
	eventually(t, func() string {
		if e.c.Connected() {
			return "client still thinks it is connected"
		}
		return ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, ovsdb.CommitOptions{NoWait: true})
	if !errors.Is(err, ovsdb.ErrNotConnected) {
		t.Errorf("err = %v, want ErrNotConnected", err)
	}
}

func TestStatisticsAreCachedOnlyWhenAskedFor(t *testing.T) {
	for _, withStats := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "MonitorStatistics"}[withStats], func(t *testing.T) {
			e := newEnv(t, func(c *ovsdb.Config) { c.MonitorStatistics = withStats })
			ovsdbtest.StartOVSVswitchd(t, e.srv)
			res, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctxT(t), ovsdb.CommitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Interfaces) != 1 || res.Interfaces[0].Ofport != 65534 {
				t.Fatalf("interfaces = %+v", res.Interfaces)
			}
			if got := res.Interfaces[0].Statistics != nil; got != withStats {
				t.Errorf("statistics present = %v, want %v (%v)", got, withStats, res.Interfaces[0].Statistics)
			}
		})
	}
}

func TestCloseDuringOutageStopsReconnecting(t *testing.T) {
	e := newEnv(t)
	e.srv.Stop()
	eventually(t, func() string {
		if e.c.Connected() {
			return "client did not notice the outage"
		}
		return ""
	})
	e.c.Close()
	if err := e.srv.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Give a reconnection attempt that was already under way every chance to land, then check
	// that the closed client is not connected.
	time.Sleep(7 * time.Second)
	if e.c.Connected() {
		t.Error("closed client reconnected after the server came back")
	}
}

func TestApplyTimeoutBoundsTheWait(t *testing.T) {
	e := newEnv(t)
	sim := ovsdbtest.StartOVSVswitchd(t, e.srv)
	sim.PauseAck()
	// No deadline on ctx at all: only ApplyTimeout can end the wait.
	res, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		Commit(context.Background(), ovsdb.CommitOptions{ApplyTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ovsdb.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if res == nil || res.Ops == 0 || res.NextCfg == 0 {
		t.Errorf("result = %+v: the committed transaction must still be described", res)
	}
}

func TestBridgeLocalInterfaceIsConfigurable(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br-phy", DatapathType: "netdev"}, &model.Interface{MTURequest: ptr(9000), ExternalIDs: map[string]string{"role": "underlay"}}))
	eventually(t, func() string {
		ifc, err := getIface(ctxT(t), e, "br-phy")
		if err != nil {
			return err.Error()
		}
		if ifc.Type != "internal" || ifc.MTURequest == nil || *ifc.MTURequest != 9000 || ifc.ExternalIDs["role"] != "underlay" {
			return "local interface not configured"
		}
		return ""
	})
	// Changing it later is an update of the owned local interface.
	commit(t, e.c.NewTxn(2).EnsureBridge(model.Bridge{Name: "br-phy", DatapathType: "netdev"}, &model.Interface{MTURequest: ptr(1500)}))
	eventually(t, func() string {
		ifc, err := getIface(ctxT(t), e, "br-phy")
		if err != nil || ifc.MTURequest == nil || *ifc.MTURequest != 1500 {
			return "local interface mtu_request not updated"
		}
		return ""
	})
}
