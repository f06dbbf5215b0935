//go:build linux

package flowbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

// pathCounters are the counters along the bed's path at one moment.
type pathCounters struct {
	vethRx, p1Rx, p2Tx uint64
}

// counters reads In.B's kernel rx_packets and br0's OpenFlow port counters (live, unlike the
// Interface statistics column, which OVS refreshes every 5 s). Fails the test on error.
func (b *Bed) counters(t testing.TB) pathCounters {
	t.Helper()
	var c pathCounters
	raw, err := os.ReadFile(filepath.Join("/sys/class/net", b.In.B.Name, "statistics", "rx_packets"))
	if err != nil {
		t.Fatalf("flowbed: %v", err)
	}
	if c.vethRx, err = strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64); err != nil {
		t.Fatalf("flowbed: rx_packets of %s: %v", b.In.B.Name, err)
	}
	dump := (*lab.Netns)(nil).Run(t, "ovs-ofctl", "dump-ports", b.Switch.OpenFlowTarget(Bridge))
	if c.p1Rx, err = portCounter(dump, "1", "rx"); err == nil {
		c.p2Tx, err = portCounter(dump, "2", "tx")
	}
	if err != nil {
		t.Fatalf("flowbed: %v in:\n%s", err, dump)
	}
	return c
}

// portCounter returns the "pkts" counter of direction dir ("rx" or "tx") of port in the output
// of `ovs-ofctl dump-ports`, whose port blocks read
// "port  1: rx pkts=N, bytes=…" followed by "         tx pkts=N, bytes=…".
func portCounter(dump, port, dir string) (uint64, error) {
	lines := strings.Split(dump, "\n")
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "port" || f[1] != port+":" {
			continue
		}
		rest := strings.Join(f[2:], " ")
		if dir == "tx" && i+1 < len(lines) {
			rest = strings.TrimSpace(lines[i+1])
		}
		v, ok := strings.CutPrefix(rest, dir+" pkts=")
		if !ok {
			return 0, fmt.Errorf("port %s: no %s pkts", port, dir)
		}
		n, _, _ := strings.Cut(v, ",")
		return strconv.ParseUint(n, 10, 64)
	}
	return 0, fmt.Errorf("port %s not found", port)
}
