//go:build linux

package lab_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// dpdkBridge is the bridge of TestDPDKBridgeForwardsBetweenNamespaces. Its tap lives in the
// root namespace, where RootNetdevLockFile keeps other userspace datapaths out meanwhile.
const dpdkBridge = "ovldpdkbr"

// dpdkLab is a DPDK vswitchd with a netdev bridge whose two dpdk ports are af_packet vdevs on
// veths leading into ns1 (10.99.0.1) and ns2 (10.99.0.2).
type dpdkLab struct {
	db       *lab.OVSDB
	sw       *lab.OVSVswitchd
	ns1, ns2 *lab.Netns
}

// newDPDKLab builds a dpdkLab and records what its cleanup must remove.
func newDPDKLab(t *testing.T, left *leftovers) *dpdkLab {
	db := lab.StartOVSDB(t)
	ns1, ns2 := lab.NewNetns(t), lab.NewNetns(t)
	v1 := lab.NewVethPair(t, lab.VethSpec{BNetns: ns1, BAddr: "10.99.0.1/24", DisableOffloads: true})
	v2 := lab.NewVethPair(t, lab.VethSpec{BNetns: ns2, BAddr: "10.99.0.2/24", DisableOffloads: true})
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK})
	*left = leftovers{dirs: []string{db.Dir}, netns: []string{ns1.Name, ns2.Name},
		links: []string{v1.A.Name, v2.A.Name, dpdkBridge}, pids: []int{db.PID(), sw.PID()}}

	if got := db.Get(t, "Open_vSwitch", ".", "dpdk_initialized"); got != "true" {
		t.Fatalf("dpdk_initialized = %q, want true", got)
	}
	db.Vsctl(t, "add-br", dpdkBridge, "--", "set", "Bridge", dpdkBridge, "datapath_type=netdev",
		"--", "add-port", dpdkBridge, "dpdk0", "--", "set", "Interface", "dpdk0", "type=dpdk",
		"options:dpdk-devargs="+sw.AFPacketDevargs(v1.A.Name),
		"--", "add-port", dpdkBridge, "dpdk1", "--", "set", "Interface", "dpdk1", "type=dpdk",
		"options:dpdk-devargs="+sw.AFPacketDevargs(v2.A.Name))
	for _, port := range []string{"dpdk0", "dpdk1"} {
		if e := db.Get(t, "Interface", port, "error"); e != "[]" {
			t.Fatalf("Interface %s error = %q", port, e)
		}
		assertOfport(t, db, port)
	}
	return &dpdkLab{db: db, sw: sw, ns1: ns1, ns2: ns2}
}

func TestDPDKBridgeForwardsBetweenNamespaces(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedDPDK, lab.NeedTraffic)
	var left leftovers
	t.Run("lab", func(t *testing.T) {
		l := newDPDKLab(t, &left)
		t.Run("ping", l.testPing)
		t.Run("tcp", l.testTCP)
		t.Run("iperf3", l.testIperf3)
		t.Run("vhostuserclient gets an ofport", l.testVhostUserClient)
		t.Run("bad devargs set Interface.error", l.testBadDevargs)
		t.Run("idle PMD sleeps", l.testIdlePMD)
	})
	assertGone(t, left)
}

func (l *dpdkLab) testPing(t *testing.T) {
	st, err := lab.Ping(t.Context(), l.ns1, "10.99.0.2", 3)
	if err != nil || st.Received != 3 {
		t.Fatalf("ping ns1 → ns2 through DPDK: %+v, %v", st, err)
	}
}

func (l *dpdkLab) testTCP(t *testing.T) {
	tr, err := lab.TCPTransfer(t.Context(), l.ns1, l.ns2, "10.99.0.2", 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("TCPTransfer: %d bytes in %.3fs, %.0f Mbit/s", tr.Bytes, tr.Seconds, tr.BitsPerSecond/1e6)
}

func (l *dpdkLab) testIperf3(t *testing.T) {
	tr, err := lab.Iperf3(t.Context(), l.ns2, l.ns1, "10.99.0.1", 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("iperf3: receiver counted %d bytes in %.3fs, %.0f Mbit/s, %d retransmits",
		tr.Bytes, tr.Seconds, tr.BitsPerSecond/1e6, tr.Retransmits)
}

func (l *dpdkLab) testVhostUserClient(t *testing.T) {
	sock := filepath.Join(l.db.Dir, "vhu0.sock") // nobody serves it; OVS keeps reconnecting
	l.db.Vsctl(t, "add-port", dpdkBridge, "vhu0", "--", "set", "Interface", "vhu0",
		"type=dpdkvhostuserclient", "options:vhost-server-path="+sock)
	assertOfport(t, l.db, "vhu0")
}

func (l *dpdkLab) testBadDevargs(t *testing.T) {
	_, stderr, err := l.db.VsctlErr(t.Context(), "add-port", dpdkBridge, "bad0", "--", "set", "Interface", "bad0",
		"type=dpdk", "options:dpdk-devargs="+l.sw.AFPacketDevargs("ovlnosuchdev"))
	if err != nil || !strings.Contains(stderr, "Error detected while setting up 'bad0'") {
		t.Errorf("ovs-vsctl: err %v, stderr %q; want success with a warning on stderr", err, stderr)
	}
	e := l.db.Get(t, "Interface", "bad0", "error")
	if !strings.Contains(e, "Error attaching device") {
		t.Errorf("Interface bad0 error = %q, want it to say \"Error attaching device\"", e)
	}
	if of := l.db.Get(t, "Interface", "bad0", "ofport"); of != "-1" {
		t.Errorf("Interface bad0 ofport = %q, want -1", of)
	}
	t.Logf("Interface.error: %s", e)
}

func (l *dpdkLab) testIdlePMD(t *testing.T) {
	time.Sleep(200 * time.Millisecond) // let the traffic above drain
	before := cpuSeconds(t, l.sw.PID())
	time.Sleep(time.Second)
	if used := cpuSeconds(t, l.sw.PID()) - before; used > 0.5 {
		t.Errorf("idle ovs-vswitchd-dpdk used %.2f s of CPU in 1 s; pmd-maxsleep not in effect?", used)
	}
}

// assertOfport fails t unless Interface port gets a positive ofport within 10 s.
func assertOfport(t *testing.T, db *lab.OVSDB, port string) {
	t.Helper()
	lab.WaitFor(t, 10*time.Second, "an ofport for "+port, func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "get", "Interface", port, "ofport")
		if err != nil {
			return err
		}
		if of, err := strconv.Atoi(out); err != nil || of < 1 {
			return errors.New("Interface " + port + " ofport = " + out)
		}
		return nil
	})
}

// TestDPDKVswitchdsOneAfterTheOther: one test runs two DPDK vswitchds one after the other,
// each on its own database, in namespaces of their own (as the stripe testbed's OVS-DPDK arms
// do). Stopping the first gives the DPDK lock up, so the second starts instead of waiting for
// a lock its own test holds; a restart takes the lock again.
func TestDPDKVswitchdsOneAfterTheOther(t *testing.T) {
	lab.Require(t, lab.NeedDPDK)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var prev *lab.OVSVswitchd
	for i := range 2 {
		db := lab.StartOVSDB(t)
		sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK, Netns: lab.NewNetns(t)})
		if got := db.Get(t, "Open_vSwitch", ".", "dpdk_initialized"); got != "true" {
			t.Fatalf("vswitchd %d: dpdk_initialized = %q, want true", i, got)
		}
		if prev != nil && prev.PID() == sw.PID() {
			t.Fatalf("vswitchd %d has the first one's pid %d", i, sw.PID())
		}
		sw.Stop(t)
		prev = sw
	}
	// Restarting the stopped second one takes the lock again.
	prev.Start(t)
	if _, _, err := prev.AppctlErr(ctx, "version"); err != nil {
		t.Fatalf("restarted DPDK vswitchd: %v", err)
	}
}
