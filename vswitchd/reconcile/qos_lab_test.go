package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// portQoS returns port's QoS reference and that row's external_ids ("" when none).
func portQoS(t *testing.T, db *lab.OVSDB, port string) (uuid, ext string) {
	t.Helper()
	uuid = strings.Trim(db.Get(t, "Port", port, "qos"), "[]")
	if uuid == "" {
		return "", ""
	}
	return uuid, db.Get(t, "QoS", uuid, "external_ids")
}

// tcHas waits until `tc ARGS` inside ns prints every one of want.
func tcHas(t *testing.T, ns *lab.Netns, what string, want []string, args ...string) string {
	t.Helper()
	var out string
	lab.WaitFor(t, 60*time.Second, what, func(ctx context.Context) error {
		var err error
		if out, err = ns.Exec(ctx, "tc", args...); err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				return fmt.Errorf("tc %s lacks %q:\n%s", strings.Join(args, " "), w, out)
			}
		}
		return nil
	})
	return out
}

// TestLabQoSLinuxHTBAndIngressPolicing: on the real ovs-vswitchd (userspace datapath, an
// af_packet port on a veth), a port's desired linux-htb QoS with two queues becomes owned QoS
// and Queue rows that ovs-vswitchd installs as the kernel's htb qdisc and classes on the veth,
// and the interface's ingress policing its columns; a changed rate
// updates the same rows (tc follows); an operator's edit of the owned QoS row is repaired; a
// second reconciler (a restarted daemon) rewrites nothing; dropping qos deletes the rows and
// ovs-vswitchd removes the htb qdisc; a QoS an operator sets on the port with ovs-vsctl is
// left alone and reported in the port's qos status.
func TestLabQoSLinuxHTBAndIngressPolicing(t *testing.T) {
	lab.Require(t, lab.NeedOVS, lab.NeedNetns)
	ns := lab.NewNetns(t)
	veth := lab.NewVethPair(t, lab.VethSpec{ANetns: ns, BNetns: ns})
	dev := veth.B.Name
	db := lab.StartOVSDB(t)
	vs := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: ns})
	n := func(v int) *int { return &v }
	htb := func(maxRate int) *model.QoS {
		return &model.QoS{Type: model.QoSLinuxHTB, MaxRate: n(maxRate), Queues: []model.Queue{
			{ID: 0, MinRate: n(1_000_000), MaxRate: n(50_000_000), Priority: n(1)},
			{ID: 5, MinRate: n(2_000_000), MaxRate: n(20_000_000), Burst: n(80_000)}}}
	}
	br := func(q *model.QoS) model.Bridge {
		return model.Bridge{Name: "br0", DatapathType: "netdev", Ports: []model.Port{{Name: dev, QoS: q,
			Interfaces: []model.Interface{{Name: dev, IngressPolicingRate: n(10_000), IngressPolicingBurst: n(1_000)}}}}}
	}
	r := labReconciler(t, db, desired(br(htb(100_000_000))))
	labState(t, r, "interface/"+dev, model.StateReady)
	labState(t, r, "qos/"+dev, model.StateReady)
	uuid, ext := portQoS(t, db, dev)
	if uuid == "" || !strings.Contains(ext, ovsdb.OwnerKey+"=ovsplane") {
		t.Fatalf("port %s qos %q with external_ids %s, want an owned row", dev, uuid, ext)
	}
	queues := db.Get(t, "QoS", uuid, "queues")
	if !strings.Contains(queues, "0=") || !strings.Contains(queues, "5=") {
		t.Errorf("QoS queues %s, want ids 0 and 5", queues)
	}
	// ovs-vswitchd's linux-htb: root class 1:fffe at max-rate, queue N as class 1:N+1.
	classes := tcHas(t, ns, "htb classes on "+dev, []string{"class htb 1:fffe", "ceil 100Mbit", "class htb 1:1 ", "ceil 50Mbit",
		"class htb 1:6 ", "rate 2Mbit ceil 20Mbit burst 10000b"}, "class", "show", "dev", dev)
	t.Logf("tc class show dev %s:\n%s", dev, classes)
	// Ingress policing on a Linux netdev is a tc police action; this machine's kernel has none
	// (ovs-vswitchd logs "adding cls_basic policing action failed"), so only the columns are
	// checked here. TestLabDPDKPolicers proves policing on a DPDK interface by its drops.
	if rate, burst := db.Get(t, "Interface", dev, "ingress_policing_rate"), db.Get(t, "Interface", dev, "ingress_policing_burst"); rate != "10000" || burst != "1000" {
		t.Errorf("ingress policing %s/%s, want 10000/1000", rate, burst)
	}
	if out := vs.Appctl(t, "qos/show", dev); !strings.Contains(out, "linux-htb") {
		t.Errorf("ovs-appctl qos/show %s:\n%s\nwant linux-htb", dev, out)
	}

	// A new total rate: the same row, updated in place; tc follows.
	r.Update(desired(br(htb(200_000_000))))
	tcHas(t, ns, "root class at 200Mbit", []string{"ceil 200Mbit"}, "class", "show", "dev", dev)
	if u, _ := portQoS(t, db, dev); u != uuid {
		t.Errorf("qos row replaced (%s → %s), want it updated in place", uuid, u)
	}

	// Drift: an operator edits the owned row; the reconciler puts it back.
	db.Vsctl(t, "set", "QoS", uuid, "other_config:max-rate=1000000")
	lab.WaitFor(t, 60*time.Second, "max-rate repaired", func(context.Context) error {
		if got := db.Get(t, "QoS", uuid, "other_config:max-rate"); got != "200000000" {
			return fmt.Errorf("max-rate %s", got)
		}
		return nil
	})
	labState(t, r, "qos/"+dev, model.StateReady)

	// A second reconciler (a restarted daemon) on the same OVSDB: no rewrite.
	uuid, ext = portQoS(t, db, dev)
	portExt := db.Get(t, "Port", dev, "external_ids")
	r2 := labReconciler(t, db, desired(br(htb(200_000_000))))
	labState(t, r2, "qos/"+dev, model.StateReady)
	if err := r2.Reconcile(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("second reconciler's pass: %v", err)
	}
	if u, e := portQoS(t, db, dev); u != uuid || e != ext {
		t.Errorf("after a restart: qos %s %s, want unchanged %s %s", u, e, uuid, ext)
	}
	if got := db.Get(t, "Port", dev, "external_ids"); got != portExt {
		t.Errorf("after a restart: port external_ids %s, want unchanged %s", got, portExt)
	}

	// Dropped: unlinked, the QoS and Queue rows deleted (root tables), the htb qdisc removed.
	r.Update(desired(br(nil)))
	r2.Update(desired(br(nil)))
	lab.WaitFor(t, 60*time.Second, "qos removed", func(ctx context.Context) error {
		qos, _, err := db.VsctlErr(ctx, "--columns=_uuid", "list", "QoS")
		if err != nil {
			return err
		}
		queue, _, err := db.VsctlErr(ctx, "--columns=_uuid", "list", "Queue")
		if err != nil {
			return err
		}
		if u, _ := portQoS(t, db, dev); u != "" || strings.TrimSpace(qos+queue) != "" {
			return fmt.Errorf("port qos %q, QoS rows %q, Queue rows %q", u, qos, queue)
		}
		return nil
	})
	lab.WaitFor(t, 60*time.Second, "htb qdisc gone from "+dev, func(ctx context.Context) error {
		out, err := ns.Exec(ctx, "tc", "qdisc", "show", "dev", dev)
		if err != nil || strings.Contains(out, "htb") {
			return fmt.Errorf("tc qdisc show: %q %v", out, err)
		}
		return nil
	})
	if _, ok := statusOf(r, "qos/"+dev); ok {
		t.Error("qos status still there after qos was dropped")
	}

	// An operator's QoS on the owned port: never replaced; the status says who holds it.
	db.Vsctl(t, "set", "Port", dev, "qos=@q", "--", "--id=@q", "create", "QoS", "type=linux-htb", "other_config:max-rate=3000000")
	r.Update(desired(br(htb(100_000_000))))
	s := labState(t, r, "qos/"+dev, model.StateError)
	if !strings.Contains(s.Error, "ovsplane did not create") || !strings.Contains(s.Error, "ovs-vsctl clear Port "+dev+" qos") {
		t.Errorf("qos status error %q, want it to name the foreign row and the fix", s.Error)
	}
	u, e := portQoS(t, db, dev)
	if u == "" || strings.Contains(e, ovsdb.OwnerKey) || db.Get(t, "QoS", u, "other_config:max-rate") != "3000000" {
		t.Errorf("operator's QoS %s (%s) was changed", u, e)
	}
}

// qosDrops waits until Interface iface's statistics counter key (updated by ovs-vswitchd every
// few seconds) is above floor while traffic runs, and returns it.
func qosDrops(t *testing.T, db *lab.OVSDB, iface, key string, floor int, traffic func(context.Context)) int {
	t.Helper()
	var n int
	lab.WaitFor(t, 90*time.Second, iface+" "+key+" above "+strconv.Itoa(floor), func(ctx context.Context) error {
		traffic(ctx)
		out, _, err := db.VsctlErr(ctx, "get", "Interface", iface, "statistics:"+key)
		if err != nil {
			return fmt.Errorf("statistics:%s: %w", key, err)
		}
		if n, err = strconv.Atoi(strings.Trim(strings.TrimSpace(out), `"`)); err != nil {
			return err
		}
		if n <= floor {
			return fmt.Errorf("%s %s = %d", iface, key, n)
		}
		return nil
	})
	return n
}

// TestLabDPDKPolicers: on the real ovs-vswitchd-dpdk, with two dpdk ports (af_packet vdevs on
// veths into two namespaces), a port's desired egress-policer QoS and the other port's ingress
// policing drop the packets of a flood ping above their rates (the interfaces' ovs_tx_qos_drops
// and ovs_rx_qos_drops count them) while a slow ping still passes; ovs-appctl qos/show shows
// the configured cir and cbs; replacing it by a trtcm-policer with a queue updates the owned
// row in place and qos/show follows; packet-based ingress policing (kpkts) is accepted by OVS
// 3.1 on a DPDK interface.
func TestLabDPDKPolicers(t *testing.T) {
	lab.Require(t, lab.NeedDPDK, lab.NeedTraffic)
	ns1, ns2 := lab.NewNetns(t), lab.NewNetns(t)
	v1 := lab.NewVethPair(t, lab.VethSpec{BNetns: ns1, BAddr: "10.99.7.1/24", DisableOffloads: true})
	v2 := lab.NewVethPair(t, lab.VethSpec{BNetns: ns2, BAddr: "10.99.7.2/24", DisableOffloads: true})
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK})
	n := func(v int) *int { return &v }
	dev0, dev1 := sw.AFPacketDevargs(v1.A.Name), sw.AFPacketDevargs(v2.A.Name)
	br := func(q *model.QoS, in1 model.Interface) model.Bridge {
		in1.Name, in1.Type, in1.Options = "d1", "dpdk", map[string]string{"dpdk-devargs": dev1}
		return model.Bridge{Name: "ovlqosbr", DatapathType: "netdev", Ports: []model.Port{
			{Name: "d0", QoS: q, Interfaces: []model.Interface{{Name: "d0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": dev0}}}},
			{Name: "d1", Interfaces: []model.Interface{in1}}}}
	}
	// 20 kB/s (160 kbit/s) out of d0; 300 kbit/s into d1: a flood ping of 1400-byte packets
	// (at least 100 a second, 1.1 Mbit/s) exceeds both; one ping a second does not.
	egress := &model.QoS{Type: model.QoSEgressPolicer, CIR: n(20_000), CBS: n(3_000)}
	r := labReconciler(t, db, desired(br(egress, model.Interface{IngressPolicingRate: n(300), IngressPolicingBurst: n(30)})))
	for _, k := range []string{"interface/d0", "interface/d1", "qos/d0"} {
		labState(t, r, k, model.StateReady)
	}
	if out := sw.Appctl(t, "qos/show", "d0"); !strings.Contains(out, "egress-policer") || !strings.Contains(out, "cir: 20000") || !strings.Contains(out, "cbs: 3000") {
		t.Errorf("ovs-appctl qos/show d0:\n%s\nwant egress-policer with cir 20000 and cbs 3000", out)
	}
	if st, err := lab.Ping(t.Context(), ns1, "10.99.7.2", 3); err != nil || st.Received != 3 {
		t.Fatalf("a slow ping through the policers: %+v, %v", st, err)
	}
	flood := func(ctx context.Context) {
		// ping exits 1 when replies are lost, which is the point.
		_, _ = ns1.Exec(ctx, "ping", "-f", "-q", "-c", "300", "-s", "1400", "-w", "5", "10.99.7.2")
	}
	// Requests enter d0 and leave d1; replies enter d1 (ingress policing) and leave d0
	// (egress policer).
	tx := qosDrops(t, db, "d0", "ovs_tx_qos_drops", 0, flood)
	rx := qosDrops(t, db, "d1", "ovs_rx_qos_drops", 0, flood)
	t.Logf("flood ping: d0 ovs_tx_qos_drops %d, d1 ovs_rx_qos_drops %d", tx, rx)

	// A trtcm-policer with a queue replaces it, in place; kpkts ingress policing on d1.
	uuid, _ := portQoS(t, db, "d0")
	trtcm := &model.QoS{Type: model.QoSTrTCMPolicer, CIR: n(20_000), CBS: n(3_000), EIR: n(40_000), EBS: n(6_000),
		Queues: []model.Queue{{ID: 1, CIR: n(10_000), CBS: n(2_000), EIR: n(20_000), EBS: n(4_000)}}}
	r.Update(desired(br(trtcm, model.Interface{IngressPolicingKpktsRate: n(1), IngressPolicingKpktsBurst: n(1)})))
	labState(t, r, "qos/d0", model.StateReady)
	if u, _ := portQoS(t, db, "d0"); u != uuid {
		t.Errorf("qos row replaced (%s → %s), want it updated in place", uuid, u)
	}
	lab.WaitFor(t, 60*time.Second, "qos/show d0 trtcm-policer", func(ctx context.Context) error {
		out, _, err := sw.AppctlErr(ctx, "qos/show", "d0")
		if err != nil || !strings.Contains(out, "trtcm-policer") || !strings.Contains(out, "eir: 40000") {
			return fmt.Errorf("qos/show d0: %q %v", out, err)
		}
		return nil
	})
	for col, want := range map[string]string{"ingress_policing_rate": "0", "ingress_policing_kpkts_rate": "1", "ingress_policing_kpkts_burst": "1"} {
		if got := db.Get(t, "Interface", "d1", col); got != want {
			t.Errorf("d1 %s = %s, want %s", col, got, want)
		}
	}
	if e := db.Get(t, "Interface", "d1", "error"); e != "[]" {
		t.Errorf("d1 error %s after kpkts policing", e)
	}
}
