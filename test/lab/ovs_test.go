//go:build linux

package lab_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

func TestOVSDBStartRestartKeepsData(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	if n := len(db.Sock); n > 107 {
		t.Errorf("socket path %q is %d bytes, over the 107-byte limit", db.Sock, n)
	}
	if db.Endpoint != "unix:"+db.Sock {
		t.Errorf("Endpoint = %q, want unix:%s", db.Endpoint, db.Sock)
	}

	db.Vsctl(t, "--no-wait", "add-br", "br0", "--", "br-set-external-id", "br0", "owner", "lab-test")
	_, stderr, err := db.VsctlErr(t.Context(), "--no-wait", "add-br", "br0")
	if err == nil || !strings.Contains(stderr, "already exists") {
		t.Errorf("duplicate add-br: err %v, stderr %q; want an error saying it already exists", err, stderr)
	}

	before := db.PID()
	db.Restart(t)
	if after := db.PID(); after == 0 || after == before {
		t.Errorf("Restart: pid %d → %d, want a new process", before, after)
	}
	if got := db.Vsctl(t, "list-br"); got != "br0" {
		t.Errorf("after Restart, list-br = %q, want br0", got)
	}
	if got := db.Vsctl(t, "br-get-external-id", "br0", "owner"); got != "lab-test" {
		t.Errorf("after Restart, external id owner = %q, want lab-test", got)
	}

	db.Stop(t)
	if db.PID() != 0 {
		t.Errorf("after Stop, PID = %d, want 0", db.PID())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, _, err := db.VsctlErr(ctx, "--timeout=1", "list-br"); err == nil {
		t.Error("ovs-vsctl succeeded against a stopped ovsdb-server")
	}
	db.Start(t)
	if got := db.Vsctl(t, "list-br"); got != "br0" {
		t.Errorf("after Stop+Start, list-br = %q, want br0", got)
	}
}

func TestDummyVswitchdAssignsOfport(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})

	// Without --no-wait, ovs-vsctl returns once ovs-vswitchd has applied the change.
	db.Vsctl(t, "add-br", "br0", "--", "add-port", "br0", "p0", "--", "add-port", "br0", "p1")
	for _, port := range []string{"p0", "p1"} {
		if of, err := strconv.Atoi(db.Get(t, "Interface", port, "ofport")); err != nil || of < 1 {
			t.Errorf("Interface %s ofport = %q, want a positive number", port, db.Get(t, "Interface", port, "ofport"))
		}
	}
	if got := db.Get(t, "Open_vSwitch", ".", "other_config:pmd-maxsleep"); got != "1000" {
		t.Errorf("other_config:pmd-maxsleep = %q, want 1000", got)
	}
	if got := sw.Appctl(t, "version"); !strings.Contains(got, "Open vSwitch") {
		t.Errorf("ovs-appctl version = %q", got)
	}
	ofctl := exec.CommandContext(t.Context(), "ovs-ofctl", "show", sw.OpenFlowTarget("br0"))
	if out, err := ofctl.CombinedOutput(); err != nil || !strings.Contains(string(out), "p0") {
		t.Errorf("ovs-ofctl show %s: %v: %s", sw.OpenFlowTarget("br0"), err, out)
	}

	before := sw.PID()
	sw.Restart(t)
	if sw.PID() == before {
		t.Errorf("Restart kept pid %d", before)
	}
	db.Vsctl(t, "add-port", "br0", "p2")
	if of := db.Get(t, "Interface", "p2", "ofport"); of == "-1" || of == "[]" {
		t.Errorf("after Restart, Interface p2 ofport = %q", of)
	}
}

func TestUserspaceVswitchdInNetnsForwards(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedTraffic)
	db := lab.StartOVSDB(t)
	host, ns1, ns2 := lab.NewNetns(t), lab.NewNetns(t), lab.NewNetns(t)
	v1 := lab.NewVethPair(t, lab.VethSpec{ANetns: host, BNetns: ns1, BAddr: "10.97.0.1/24", DisableOffloads: true})
	v2 := lab.NewVethPair(t, lab.VethSpec{ANetns: host, BNetns: ns2, BAddr: "10.97.0.2/24", DisableOffloads: true})
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: host})

	db.Vsctl(t, "add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev",
		"--", "add-port", "br0", v1.A.Name, "--", "add-port", "br0", v2.A.Name)
	for _, port := range []string{v1.A.Name, v2.A.Name} {
		if e := db.Get(t, "Interface", port, "error"); e != "[]" {
			t.Errorf("Interface %s error = %q", port, e)
		}
	}
	host.Run(t, "ip", "link", "show", "dev", "br0") // the bridge's tap lives in the vswitchd's namespace

	st, err := lab.Ping(t.Context(), ns1, "10.97.0.2", 3)
	if err != nil || st.Received != 3 {
		t.Fatalf("ping through the userspace bridge: %+v, %v", st, err)
	}
	tr, err := lab.TCPTransfer(t.Context(), ns1, ns2, "10.97.0.2", 4<<20)
	if err != nil {
		t.Fatalf("TCP through the userspace bridge: %v", err)
	}
	t.Logf("userspace datapath: %d bytes in %.2fs, %.0f Mbit/s", tr.Bytes, tr.Seconds, tr.BitsPerSecond/1e6)
}
