//go:build linux

package ovsproc_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestPMDRxqShowOfDPDKVswitchd: against Debian's ovs-vswitchd-dpdk, PMDRxqShow says
// ErrNoDatapath before a netdev bridge exists, no threads for a bridge without ports, and, once
// two dpdkvhostuserclient ports exist, one PMD thread on the lab's core polling both ports'
// queue 0, enabled, parsed from the daemon's own text.
func TestPMDRxqShowOfDPDKVswitchd(t *testing.T) {
	lab.Require(t, lab.NeedDPDK)
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK, OtherConfig: map[string]string{"pmd-cpu-mask": "0x2"}})
	ctx := t.Context()

	if pmds, err := ovsproc.PMDRxqShow(ctx, sw.CtlPath); !errors.Is(err, ovsproc.ErrNoDatapath) {
		t.Errorf("without a datapath: %+v, %v; want ErrNoDatapath", pmds, err)
	}
	db.Vsctl(t, "add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
	if pmds, err := ovsproc.PMDRxqShow(ctx, sw.CtlPath); err != nil || len(pmds) != 0 {
		t.Errorf("a bridge without ports: %+v, %v; want no threads", pmds, err)
	}
	for _, p := range []string{"vhu0", "vhu1"} {
		db.Vsctl(t, "add-port", "br0", p, "--", "set", "Interface", p, "type=dpdkvhostuserclient",
			"options:vhost-server-path="+filepath.Join(db.Dir, p+".sock"))
	}
	pmds, err := ovsproc.PMDRxqShow(ctx, sw.CtlPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(pmds) != 1 || pmds[0].Core != 1 || pmds[0].NUMA != 0 || pmds[0].Isolated {
		t.Fatalf("threads = %+v; want one on core 1, NUMA 0, not isolated", pmds)
	}
	var ports []string
	for _, q := range pmds[0].Rxqs {
		if q.Queue != 0 || !q.Enabled || q.UsagePct < -1 || q.UsagePct > 100 {
			t.Errorf("queue %+v", q)
		}
		ports = append(ports, q.Port)
	}
	if slices.Sort(ports); !slices.Equal(ports, []string{"vhu0", "vhu1"}) {
		t.Errorf("ports = %q", ports)
	}
}
