package reconcile_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// netflowV5 is what the test reads of one NetFlow v5 datagram: the header's record count and
// engine ids, and each record's source and destination addresses.
type netflowV5 struct {
	count                uint16
	engineType, engineID byte
	flows                []string // "SRC>DST"
}

// parseNetFlowV5 decodes a NetFlow v5 datagram (24-byte header, 48-byte records).
func parseNetFlowV5(b []byte) (netflowV5, error) {
	var d netflowV5
	if len(b) < 24 {
		return d, fmt.Errorf("datagram of %d bytes, shorter than a NetFlow v5 header", len(b))
	}
	if v := binary.BigEndian.Uint16(b); v != 5 {
		return d, fmt.Errorf("NetFlow version %d, want 5", v)
	}
	d.count = binary.BigEndian.Uint16(b[2:])
	d.engineType, d.engineID = b[20], b[21]
	if want := 24 + 48*int(d.count); len(b) != want {
		return d, fmt.Errorf("datagram of %d bytes for %d records, want %d", len(b), d.count, want)
	}
	for i := range int(d.count) {
		r := b[24+48*i:]
		d.flows = append(d.flows, net.IP(r[0:4]).String()+">"+net.IP(r[4:8]).String())
	}
	return d, nil
}

// collector is a UDP socket the test reads NetFlow datagrams from.
type collector struct{ conn *net.UDPConn }

func startCollector(t *testing.T) *collector {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &collector{conn: conn}
}

func (c *collector) target() string { return c.conn.LocalAddr().String() }

// await sends traffic (send) and reads datagrams until one carries a record of flow ("SRC>DST"),
// within a bound; it returns that datagram.
func (c *collector) await(t *testing.T, flow string, send func(context.Context) error) netflowV5 {
	t.Helper()
	var got netflowV5
	buf := make([]byte, 65536)
	lab.WaitFor(t, 90*time.Second, "a NetFlow v5 record of "+flow, func(ctx context.Context) error {
		if err := send(ctx); err != nil {
			return err
		}
		if err := c.conn.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
			return err
		}
		for {
			n, _, err := c.conn.ReadFromUDP(buf)
			if err != nil {
				return fmt.Errorf("no datagram with %s yet: %w", flow, err)
			}
			d, err := parseNetFlowV5(buf[:n])
			if err != nil {
				return err
			}
			for _, f := range d.flows {
				if f == flow {
					got = d
					return nil
				}
			}
		}
	})
	return got
}

// drain discards the datagrams already queued.
func (c *collector) drain() {
	buf := make([]byte, 65536)
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, _, err := c.conn.ReadFromUDP(buf); err != nil {
			return
		}
	}
}

// udpPacket is a flow for netdev-dummy/receive: UDP from 10.0.0.SRC to 10.0.0.2.
func udpPacket(src int) string {
	return fmt.Sprintf("eth(src=50:54:00:00:00:%02x,dst=50:54:00:00:00:02),eth_type(0x0800),"+
		"ipv4(src=10.0.0.%d,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1234,dst=5678)", src, src)
}

// trafficThenExpire receives one packet on dummy port p1 and purges the datapath flows, which
// makes ovs-vswitchd expire the flow and export its NetFlow record.
func trafficThenExpire(vs *lab.OVSVswitchd, src int) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, stderr, err := vs.AppctlErr(ctx, "netdev-dummy/receive", "p1", udpPacket(src)); err != nil {
			return fmt.Errorf("netdev-dummy/receive: %w: %s", err, stderr)
		}
		if _, stderr, err := vs.AppctlErr(ctx, "revalidator/purge"); err != nil {
			return fmt.Errorf("revalidator/purge: %w: %s", err, stderr)
		}
		return nil
	}
}

// netflowRow returns the bridge's NetFlow reference and that row's external_ids ("" when none).
func netflowRow(t *testing.T, db *lab.OVSDB) (uuid, ext string) {
	t.Helper()
	uuid = strings.Trim(db.Get(t, "Bridge", "br0", "netflow"), "[]")
	if uuid == "" {
		return "", ""
	}
	return uuid, db.Get(t, "NetFlow", uuid, "external_ids")
}

// TestLabNetFlowExport: a bridge's desired NetFlow becomes an owned NetFlow row, and the real
// ovs-vswitchd (dummy datapath) sends NetFlow v5 datagrams with the configured engine ids to a
// UDP socket of the test for traffic received on a dummy port; changing the engine id updates
// that same row (the datagrams follow); dropping netflow removes the row; a second reconciler
// (a restarted daemon, new generation) rewrites nothing.
func TestLabNetFlowExport(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	vs := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	col := startCollector(t)
	one := func(v int) *int { return &v }
	br := func(nf *model.NetFlow) model.Bridge {
		return model.Bridge{Name: "br0", FailMode: "standalone", NetFlow: nf,
			Ports: []model.Port{{Name: "p1", Interfaces: []model.Interface{{Name: "p1", OFPortRequest: one(1)}}},
				{Name: "p2", Interfaces: []model.Interface{{Name: "p2", OFPortRequest: one(2)}}}}}
	}
	nf := &model.NetFlow{Targets: []string{col.target()}, ActiveTimeout: 30, EngineType: one(7), EngineID: one(9)}
	r := labReconciler(t, db, desired(br(nf)))
	labState(t, r, "netflow/br0", model.StateReady)
	labState(t, r, "interface/p1", model.StateReady)
	uuid, ext := netflowRow(t, db)
	if uuid == "" || !strings.Contains(ext, ovsdb.OwnerKey+"=ovsplane") {
		t.Fatalf("br0 netflow %q with external_ids %s, want an owned row", uuid, ext)
	}

	d := col.await(t, "10.0.0.1>10.0.0.2", trafficThenExpire(vs, 1))
	if d.engineType != 7 || d.engineID != 9 {
		t.Errorf("datagram engine type/id %d/%d, want 7/9", d.engineType, d.engineID)
	}

	// A new engine id: the same row, updated in place; the next datagrams carry it.
	nf2 := *nf
	nf2.EngineID = one(11)
	r.Update(desired(br(&nf2)))
	lab.WaitFor(t, 60*time.Second, "engine_id 11 in OVSDB", func(context.Context) error {
		if got := db.Get(t, "NetFlow", uuid, "engine_id"); got != "11" {
			return fmt.Errorf("engine_id %s", got)
		}
		return nil
	})
	labState(t, r, "netflow/br0", model.StateReady)
	col.drain()
	d = col.await(t, "10.0.0.3>10.0.0.2", trafficThenExpire(vs, 3))
	if d.engineType != 7 || d.engineID != 11 {
		t.Errorf("after the change: engine type/id %d/%d, want 7/11", d.engineType, d.engineID)
	}

	// Drift: an operator edits the owned row; the reconciler puts it back.
	db.Vsctl(t, "set", "NetFlow", uuid, "active_timeout=5")
	lab.WaitFor(t, 60*time.Second, "active_timeout repaired", func(context.Context) error {
		if got := db.Get(t, "NetFlow", uuid, "active_timeout"); got != "30" {
			return fmt.Errorf("active_timeout %s", got)
		}
		return nil
	})

	// Dropped: unlinked from the bridge, and the row is gone.
	r.Update(desired(br(nil)))
	lab.WaitFor(t, 60*time.Second, "netflow removed", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "--columns=_uuid", "list", "NetFlow")
		if err != nil {
			return err
		}
		if u, _ := netflowRow(t, db); u != "" || strings.TrimSpace(out) != "" {
			return fmt.Errorf("bridge netflow %q, NetFlow rows %q", u, out)
		}
		return nil
	})
	if _, ok := statusOf(r, "netflow/br0"); ok {
		t.Error("netflow/br0 still has a status after it was dropped")
	}

	// Back, then a second reconciler (a restarted daemon) on the same OVSDB: no rewrite.
	r.Update(desired(br(nf)))
	labState(t, r, "netflow/br0", model.StateReady)
	uuid, ext = netflowRow(t, db)
	brExt := db.Get(t, "Bridge", "br0", "external_ids")
	r2 := labReconciler(t, db, desired(br(nf)))
	labState(t, r2, "netflow/br0", model.StateReady)
	if err := r2.Reconcile(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("second reconciler's pass: %v", err)
	}
	if u, e := netflowRow(t, db); u != uuid || e != ext {
		t.Errorf("after a restart: netflow %s %s, want unchanged %s %s", u, e, uuid, ext)
	}
	if got := db.Get(t, "Bridge", "br0", "external_ids"); got != brExt {
		t.Errorf("after a restart: bridge external_ids %s, want unchanged %s", got, brExt)
	}
}

// TestLabIPFIXAndSFlowExport: a bridge's desired IPFIX and sFlow settings make the real
// ovs-vswitchd (dummy datapath) send IPFIX messages (version 10) with the configured
// observation domain, and sFlow v5 datagrams, to UDP sockets of the test; a collector set
// appears as an owned Flow_Sample_Collector_Set naming the bridge, and an OpenFlow sample
// action naming it exports IPFIX to the set's target.
func TestLabIPFIXAndSFlowExport(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	vs := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ipfixSock, sflowSock, setSock := startCollector(t), startCollector(t), startCollector(t)
	one := func(v int) *int { return &v }
	b := model.Bridge{Name: "br0", FailMode: "standalone",
		IPFIX: &model.IPFIX{Targets: []string{ipfixSock.target()}, Sampling: one(1), ObsDomainID: one(42), ObsPointID: one(7),
			OtherConfig: map[string]string{"enable-input-sampling": "true"}},
		SFlow:         &model.SFlow{Targets: []string{sflowSock.target()}, Agent: "127.0.0.1", Sampling: one(1), Polling: one(1)},
		CollectorSets: []model.CollectorSet{{ID: 5, IPFIX: model.IPFIX{Targets: []string{setSock.target()}}}},
		Ports: []model.Port{{Name: "p1", Interfaces: []model.Interface{{Name: "p1", OFPortRequest: one(1)}}},
			{Name: "p2", Interfaces: []model.Interface{{Name: "p2", OFPortRequest: one(2)}}}}}
	r := labReconciler(t, db, desired(b))
	for _, k := range []string{"ipfix/br0", "sflow/br0", "collector_set/br0/5", "interface/p1"} {
		labState(t, r, k, model.StateReady)
	}
	set := db.Vsctl(t, "--bare", "--columns=bridge,external_ids", "find", "Flow_Sample_Collector_Set", "id=5")
	if !strings.Contains(set, strings.Trim(db.Get(t, "Bridge", "br0", "_uuid"), "[]")) || !strings.Contains(set, ovsdb.OwnerKey+"=ovsplane") {
		t.Errorf("collector set 5: %q, want an owned row naming br0", set)
	}

	buf := make([]byte, 65536)
	read := func(ctx context.Context, c *collector, what string, ok func([]byte) bool) error {
		if err := trafficThenExpire(vs, 5)(ctx); err != nil {
			return err
		}
		if err := c.conn.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
			return err
		}
		for {
			n, _, err := c.conn.ReadFromUDP(buf)
			if err != nil {
				return fmt.Errorf("no %s yet: %w", what, err)
			}
			if ok(buf[:n]) {
				return nil
			}
		}
	}
	lab.WaitFor(t, 90*time.Second, "an IPFIX message of observation domain 42", func(ctx context.Context) error {
		return read(ctx, ipfixSock, "IPFIX message", func(b []byte) bool {
			return len(b) >= 16 && binary.BigEndian.Uint16(b) == 10 && binary.BigEndian.Uint32(b[12:]) == 42
		})
	})
	// Flow-based sampling: the sample action (observation domain 43) names collector set 5,
	// whose IPFIX row sends it to the set's own target.
	if out, err := exec.CommandContext(t.Context(), "ovs-ofctl", "add-flow", vs.OpenFlowTarget("br0"),
		"priority=100,udp,actions=sample(probability=65535,collector_set_id=5,obs_domain_id=43,obs_point_id=1),NORMAL").CombinedOutput(); err != nil {
		t.Fatalf("ovs-ofctl add-flow: %v: %s", err, out)
	}
	lab.WaitFor(t, 90*time.Second, "an IPFIX message of collector set 5 (observation domain 43)", func(ctx context.Context) error {
		return read(ctx, setSock, "IPFIX message", func(b []byte) bool {
			return len(b) >= 16 && binary.BigEndian.Uint16(b) == 10 && binary.BigEndian.Uint32(b[12:]) == 43
		})
	})
	lab.WaitFor(t, 90*time.Second, "an sFlow v5 datagram from agent 127.0.0.1", func(ctx context.Context) error {
		return read(ctx, sflowSock, "sFlow datagram", func(b []byte) bool {
			// version 5, agent address type 1 (IPv4), agent 127.0.0.1
			return len(b) >= 12 && binary.BigEndian.Uint32(b) == 5 && binary.BigEndian.Uint32(b[4:]) == 1 &&
				net.IP(b[8:12]).Equal(net.IPv4(127, 0, 0, 1))
		})
	})
}
