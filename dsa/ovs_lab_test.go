//go:build linux

package dsa_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestProbeOVSOfDebianDPDKBuild: Debian 12's ovs-vswitchd-dpdk (OVS 3.1, DPDK 22.11), read
// over unixctl, has no vhost async: the probe says so naming its DPDK version, even with
// other_config:vhost-async-support=true written (which that build accepts and ignores); auto
// warns, require fails with OVS_NO_VHOST_ASYNC; its coverage counters show no vhost async.
func TestProbeOVSOfDebianDPDKBuild(t *testing.T) {
	lab.Require(t, lab.NeedDPDK)
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK, OtherConfig: map[string]string{dsa.VhostAsyncSupportKey: "true"}})
	ctx := t.Context()
	cmds, err := ovsproc.AppctlCommands(ctx, sw.CtlPath)
	if err != nil {
		t.Fatal(err)
	}
	dpdkVersion := db.Get(t, "Open_vSwitch", ".", "dpdk_version")
	if !strings.HasPrefix(dpdkVersion, "DPDK 22.11") {
		t.Fatalf("dpdk_version = %q, want Debian 12's DPDK 22.11", dpdkVersion)
	}
	c := dsa.ProbeOVS(cmds, map[string]string{dsa.VhostAsyncSupportKey: "true"}, "3.1.0", dpdkVersion)
	if c.VhostAsync || c.ThreshCommand != "" || c.AsyncSupportKey != "true" ||
		!strings.HasPrefix(c.Reason, "ovs-vswitchd 3.1.0 with "+dpdkVersion+" has no vhost async DMA support: upstream OVS never merged it") ||
		!strings.HasSuffix(c.Reason, "other_config:vhost-async-support=true is set but this build ignores it") {
		t.Errorf("ProbeOVS = %+v", c)
	}
	if w, err := c.Check(dsa.AsyncAuto); err != nil || w == nil || w.Code != dsa.CodeOVSNoVhostAsync {
		t.Errorf("auto: %+v, %v", w, err)
	}
	if _, err := c.Check(dsa.AsyncRequire); dsa.CodeOf(err) != dsa.CodeOVSNoVhostAsync {
		t.Errorf("require: %v", err)
	}
	text, err := ovsproc.Unixctl(ctx, sw.CtlPath, "coverage/show")
	if err != nil {
		t.Fatal(err)
	}
	if cov, err := dsa.ParseVhostAsyncCoverage(text); err != nil || cov.Active || len(cov.Counters) != 0 {
		t.Errorf("coverage: %+v, %v", cov, err)
	}
}
