//go:build linux

package bench

import (
	"os/exec"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/test/lab"
)

// BenchmarkAppctlListCommands (issue 14): how the daemon reads the running ovs-vswitchd's
// command set for the plugins' facts — one JSON-RPC request on its unixctl socket
// (ovsproc.AppctlCommands) — against what a script would run, `ovs-appctl -t CTL
// list-commands`, in the same run on the same dummy-datapath ovs-vswitchd. Reports the mean
// per call of each and their ratio (ovs-appctl / ovsplane).
//
//	go test -run '^$' -bench BenchmarkAppctlListCommands -benchtime 1x ./bench/
func BenchmarkAppctlListCommands(b *testing.B) {
	lab.Require(b, lab.NeedOVS)
	db := lab.StartOVSDB(b)
	sw := db.StartOVSVswitchd(b, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	const calls = 200
	for range b.N {
		start := time.Now()
		for range calls {
			if _, err := ovsproc.AppctlCommands(b.Context(), sw.CtlPath); err != nil {
				b.Fatal(err)
			}
		}
		ours := time.Since(start) / calls
		start = time.Now()
		for range calls {
			if out, err := exec.CommandContext(b.Context(), "ovs-appctl", "-t", sw.CtlPath, "list-commands").CombinedOutput(); err != nil {
				b.Fatalf("ovs-appctl: %v: %s", err, out)
			}
		}
		theirs := time.Since(start) / calls
		b.ReportMetric(float64(ours.Microseconds()), "ovsplane-us/call")
		b.ReportMetric(float64(theirs.Microseconds()), "ovs-appctl-us/call")
		b.ReportMetric(float64(theirs)/float64(ours), "ratio")
	}
}
