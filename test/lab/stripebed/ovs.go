//go:build linux

package stripebed

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// lacpWait bounds the wait for LACP to negotiate on a bond.
const lacpWait = 30 * time.Second

// OVSBond is one ovs-vswitchd (userspace datapath, its own ovsdb-server) per node, each with
// bridge br0 holding bond0 over the node's link ends, LACP active, and the bridge's internal
// port addressed 10.78.0.1 (A) / 10.78.0.2 (B).
type OVSBond struct {
	// DBA, DBB and SwA, SwB are the nodes' databases and switches.
	DBA, DBB *lab.OVSDB
	SwA, SwB *lab.OVSVswitchd
	// AAddr and BAddr are the bridges' addresses.
	AAddr, BAddr netip.Addr
}

// StartOVSBond starts the switches and the bonds. The links' offloads are turned off (the
// af_packet ports of the userspace datapath need whole, checksummed frames), ARP replies are
// limited to the interface that owns the address (so the nodes' kernels do not answer for the
// bridge address on the bonded veths), and each bond port gets QoS type linux-noop, since
// adding a port to OVS otherwise deletes its root qdisc (the tbf). It fails the test when the
// tbf did not survive or LACP does not negotiate.
func (b *Bed) StartOVSBond(t testing.TB) *OVSBond {
	t.Helper()
	o := &OVSBond{AAddr: netip.MustParseAddr("10.78.0.1"), BAddr: netip.MustParseAddr("10.78.0.2")}
	for i, ns := range []*lab.Netns{b.A, b.B} {
		for key, val := range map[string]string{"net.ipv4.conf.all.arp_ignore": "1", "net.ipv4.conf.all.arp_announce": "2"} {
			if err := SetSysctl(ns, key, val); err != nil {
				t.Fatalf("stripebed: %v", err)
			}
		}
		db := lab.StartOVSDB(t)
		sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: ns})
		args := []string{"add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev", "--", "add-bond", "br0", "bond0"}
		for _, l := range b.Links {
			end := l.A
			if i == 1 {
				end = l.B
			}
			lab.DisableOffloads(t, ns, end.Name)
			args = append(args, end.Name)
		}
		args = append(args, "lacp=active", "bond_mode=balance-slb", "other_config:lacp-time=fast",
			"qos=@noop", "--", "--id=@noop", "create", "QoS", "type=linux-noop")
		db.Vsctl(t, args...)
		addr := o.AAddr
		if i == 1 {
			addr = o.BAddr
		}
		ns.Run(t, "ip", "addr", "add", addr.String()+"/24", "dev", "br0")
		ns.Run(t, "ip", "link", "set", "br0", "up")
		if i == 0 {
			o.DBA, o.SwA = db, sw
		} else {
			o.DBB, o.SwB = db, sw
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), lacpWait)
	defer cancel()
	if err := b.CheckShaping(ctx); err != nil {
		t.Fatalf("stripebed: after adding the links to OVS: %v", err)
	}
	return o
}

// SetBondMode sets both bonds' mode ("balance-slb", "balance-tcp", "active-backup") and waits
// until LACP has negotiated and every member is enabled on both sides.
func (o *OVSBond) SetBondMode(t testing.TB, mode string) {
	t.Helper()
	for _, db := range []*lab.OVSDB{o.DBA, o.DBB} {
		db.Vsctl(t, "set", "Port", "bond0", "bond_mode="+mode)
	}
	ctx, cancel := context.WithTimeout(t.Context(), lacpWait)
	defer cancel()
	for _, sw := range []*lab.OVSVswitchd{o.SwA, o.SwB} {
		if err := waitBond(ctx, sw, mode); err != nil {
			t.Fatalf("stripebed: %v", err)
		}
	}
}

// waitBond polls bond/show until the bond is in mode with LACP negotiated and no member
// disabled.
func waitBond(ctx context.Context, sw *lab.OVSVswitchd, mode string) error {
	var last string
	for {
		out, _, err := sw.AppctlErr(ctx, "bond/show", "bond0")
		if err == nil {
			last = out
			if strings.Contains(out, "bond_mode: "+mode) && strings.Contains(out, "lacp_status: negotiated") &&
				!memberDisabled(out) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bond0 in %s: not %s with LACP negotiated and all members enabled: %w; last bond/show:\n%s",
				sw.Netns, mode, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// memberDisabled tells whether bond/show lists a member line "member NAME: disabled".
func memberDisabled(show string) bool {
	for line := range strings.Lines(show) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "member ") && strings.HasSuffix(line, ": disabled") {
			return true
		}
	}
	return false
}
