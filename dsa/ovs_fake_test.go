package dsa_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/ovsproc/unixctltest"
)

// TestProbeOVSOverUnixctl: the probe on the commands read from a fake ovs-vswitchd: capable
// when the fake has the vhost async commands (then the threshold is set through the command
// the probe names), not capable with Debian's captured command set; the coverage counters of
// a capable build that copied with DMA read as active.
func TestProbeOVSOverUnixctl(t *testing.T) {
	ctx := t.Context()
	for _, capable := range []bool{false, true} {
		s := unixctltest.Start(t, unixctltest.Options{VhostAsync: capable})
		cmds, err := ovsproc.AppctlCommands(ctx, s.Path)
		if err != nil {
			t.Fatal(err)
		}
		c := dsa.ProbeOVS(cmds, map[string]string{dsa.VhostAsyncSupportKey: "true"}, "3.1.0", "DPDK 22.11.1")
		if c.VhostAsync != capable {
			t.Fatalf("capable=%v: ProbeOVS = %+v", capable, c)
		}
		if !capable {
			continue
		}
		if _, err := ovsproc.Unixctl(ctx, s.Path, c.ThreshCommand, "256"); err != nil {
			t.Fatal(err)
		}
		if v, ok := s.Thresh(); !ok || v != 256 {
			t.Errorf("threshold %d, %v", v, ok)
		}
		s.SetCoverage(strings.Replace(unixctltest.StockCoverage(), "\n", "\nvhost_async_tx_enqueue     5.0/sec     4.000/sec        0.0700/sec   total: 250\n", 1))
		text, err := ovsproc.Unixctl(ctx, s.Path, "coverage/show")
		if err != nil {
			t.Fatal(err)
		}
		if cov, err := dsa.ParseVhostAsyncCoverage(text); err != nil || !cov.Active || cov.Counters["vhost_async_tx_enqueue"] != 250 {
			t.Errorf("coverage: %+v, %v", cov, err)
		}
	}
}
