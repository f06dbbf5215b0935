package ovsproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The files in testdata/pmd-rxq-show are replies of Debian 12's ovs-vswitchd-dpdk 3.1.0
// (DPDK 22.11), captured over unixctl: dpdkvhostuserclient ports without a peer, one PMD
// (core 1, the default) or two (pmd-cpu-mask=0x3, vhu2 pinned with pmd-rxq-affinity=0:1),
// before and after the first usage measurement, and a netdev bridge without ports.
func TestParsePMDRxqShowCaptured(t *testing.T) {
	vhu := func(port string, usage int) PMDRxq {
		return PMDRxq{Port: port, Queue: 0, Enabled: true, UsagePct: usage}
	}
	for file, want := range map[string][]PMDThread{
		"ovs3.1-dpdk-vhostuserclient.txt": {{NUMA: 0, Core: 1, Rxqs: []PMDRxq{vhu("vhu0", -1), vhu("vhu1", -1)}, OverheadPct: -1}},
		"ovs3.1-dpdk-two-pmds-not-avail.txt": {
			{NUMA: 0, Core: 0, Rxqs: []PMDRxq{vhu("vhu0", -1), vhu("vhu1", -1)}, OverheadPct: -1},
			{NUMA: 0, Core: 1, Isolated: true, Rxqs: []PMDRxq{vhu("vhu2", -1)}, OverheadPct: -1},
		},
		"ovs3.1-dpdk-two-pmds-isolated.txt": {
			{NUMA: 0, Core: 0, Rxqs: []PMDRxq{vhu("vhu0", 0), vhu("vhu1", 0)}, OverheadPct: 0},
			{NUMA: 0, Core: 1, Isolated: true, Rxqs: []PMDRxq{vhu("vhu2", 0)}, OverheadPct: 0},
		},
		"ovs3.1-netdev-bridge-no-ports.txt": nil,
	} {
		text, err := os.ReadFile(filepath.Join("testdata", "pmd-rxq-show", file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParsePMDRxqShow(string(text))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ParsePMDRxqShow = %+v, %v\nwant %+v", file, got, err, want)
		}
	}
}

func TestParsePMDRxqShowShapes(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []PMDThread
	}{
		{"empty (-pmd of a core without a thread)", "", nil},
		{"a PMD without queues", "Displaying last 60 seconds pmd usage %\npmd thread numa_id 1 core_id 12:\n  isolated : false\n",
			[]PMDThread{{NUMA: 1, Core: 12, OverheadPct: -1}}},
		{"disabled queue, usage, long name with a space, CRLF, a later OVS's extra line",
			"pmd thread numa_id 0 core_id 3:\r\n  isolated : true\r\n  port: vhost user 0          queue-id: 17 (disabled)  pmd usage: 42 %\r\n  future : x\r\n  overhead:  7 %\r\n",
			[]PMDThread{{NUMA: 0, Core: 3, Isolated: true, Rxqs: []PMDRxq{{Port: "vhost user 0", Queue: 17, UsagePct: 42}}, OverheadPct: 7}}},
		{"OVS 2.11: tabs, no queue state, no heading", "pmd thread numa_id 0 core_id 1:\n\tisolated : false\n\tport: p0\tqueue-id:  0\tpmd usage:  5 %\n",
			[]PMDThread{{NUMA: 0, Core: 1, Rxqs: []PMDRxq{{Port: "p0", Enabled: true, UsagePct: 5}}, OverheadPct: -1}}},
	} {
		got, err := ParsePMDRxqShow(tc.text)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ParsePMDRxqShow = %+v, %v\nwant %+v", tc.name, got, err, tc.want)
		}
	}
	head := "pmd thread numa_id 0 core_id 1:\n"
	for _, tc := range []struct{ name, text, want string }{
		{"unknown first line", "hello\n", `line 1 "hello": not a heading or a PMD thread`},
		{"port outside a thread", "Displaying last 60 seconds pmd usage %\n  port: p0  queue-id: 0 (enabled)  pmd usage: 0 %\n", "line 2"},
		{"bad head", "pmd thread numa_id x core_id 1:\n", `numa_id "x" is not a number`},
		{"negative core", "pmd thread numa_id 0 core_id -1:\n", `core_id "-1:" is not a number`},
		{"head without colon", "pmd thread numa_id 0 core_id 1\n", `want "pmd thread numa_id N core_id M:"`},
		{"isolated maybe", head + "  isolated : maybe\n", "isolated : true"},
		{"no queue-id", head + "  port: p0 pmd usage: 0 %\n", "no queue-id"},
		{"empty name", head + "  port: queue-id: 0 (enabled) pmd usage: 0 %\n", "port name of 0 bytes"},
		{"long name", head + "  port: " + strings.Repeat("n", MaxPMDPortName+1) + " queue-id: 0 pmd usage: 0 %\n", "port name of 257 bytes"},
		{"control char", head + "  port: a\x01b queue-id: 0 pmd usage: 0 %\n", "control character"},
		{"bad queue", head + "  port: p0 queue-id: q pmd usage: 0 %\n", `queue-id "q"`},
		{"bad state", head + "  port: p0 queue-id: 0 (maybe) pmd usage: 0 %\n", "(maybe)"},
		{"no usage", head + "  port: p0 queue-id: 0 (enabled)\n", `no "pmd usage:"`},
		{"usage over 100", head + "  port: p0 queue-id: 0 (enabled) pmd usage: 101 %\n", "percentage"},
		{"bad overhead", head + "  overhead: lots\n", "overhead"},
		{"unindented unknown line in a thread", head + "garbage\n", "not a PMD thread's line"},
		{"too many threads", strings.Repeat(head, MaxPMDThreads+1), "more than 1024 PMD threads"},
		{"too many queues", head + strings.Repeat("  port: p queue-id: 0 pmd usage: 0 %\n", MaxPMDRxqs+1), "more than 16384 receive queues"},
		{"too many lines", strings.Repeat("\n", MaxPMDRxqShowLines+1), "lines (at most 65536)"},
		{"too long", strings.Repeat(" ", MaxPMDRxqShowText+1), "bytes (at most 1048576)"},
	} {
		if _, err := ParsePMDRxqShow(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "pmd-rxq-show: ") {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// renderPMDRxqShow writes threads the way OVS 3.1 does.
func renderPMDRxqShow(pmds []PMDThread) string {
	var b strings.Builder
	b.WriteString("Displaying last 60 seconds pmd usage %\n")
	pct := func(v int) string {
		if v < 0 {
			return "NOT AVAIL"
		}
		return fmt.Sprintf("%2d %%", v)
	}
	for _, p := range pmds {
		fmt.Fprintf(&b, "pmd thread numa_id %d core_id %d:\n  isolated : %t\n", p.NUMA, p.Core, p.Isolated)
		for _, q := range p.Rxqs {
			state := "(enabled) "
			if !q.Enabled {
				state = "(disabled)"
			}
			fmt.Fprintf(&b, "  port: %-16s  queue-id: %2d %s  pmd usage: %s\n", q.Port, q.Queue, state, pct(q.UsagePct))
		}
		if len(p.Rxqs) > 0 || p.OverheadPct >= 0 {
			fmt.Fprintf(&b, "  overhead: %s\n", pct(p.OverheadPct))
		}
	}
	return b.String()
}

// FuzzParsePMDRxqShow: whatever the text, ParsePMDRxqShow does not panic, keeps its bounds,
// and parses its result's OVS-style rendering back to the same threads.
func FuzzParsePMDRxqShow(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "pmd-rxq-show", "*.txt"))
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(text))
	}
	f.Add("pmd thread numa_id 0 core_id 3:\n  isolated : true\n  port: a queue-id: b queue-id: 1 (disabled) pmd usage: 100 %\n  overhead: NOT AVAIL\n")
	f.Add("pmd thread numa_id -1 core_id 0:\n  port:  queue-id: 0 pmd usage: NOT AVAIL\n")
	f.Fuzz(func(t *testing.T, text string) {
		pmds, err := ParsePMDRxqShow(text)
		if err != nil {
			return
		}
		if len(pmds) > MaxPMDThreads {
			t.Fatalf("%d threads", len(pmds))
		}
		n := 0
		for _, p := range pmds {
			n += len(p.Rxqs)
			for _, q := range p.Rxqs {
				if q.Port == "" || len(q.Port) > MaxPMDPortName || q.UsagePct < -1 || q.UsagePct > 100 || q.Queue < 0 {
					t.Fatalf("bad queue %+v", q)
				}
			}
		}
		if n > MaxPMDRxqs {
			t.Fatalf("%d queues", n)
		}
		again, err := ParsePMDRxqShow(renderPMDRxqShow(pmds))
		if err != nil || !reflect.DeepEqual(again, pmds) {
			t.Fatalf("the rendering of %+v parses to %+v, %v", pmds, again, err)
		}
	})
}

// TestPMDRxqShowNoDatapath: the daemon's refusal without a userspace datapath becomes
// ErrNoDatapath; other refusals stay *UnixctlError.
func TestPMDRxqShowNoDatapath(t *testing.T) {
	for _, tc := range []struct {
		message string
		wantErr func(error) bool
	}{
		{"please specify an existing datapath", func(err error) bool { return errors.Is(err, ErrNoDatapath) }},
		{"no such thing", func(err error) bool {
			var ue *UnixctlError
			return errors.As(err, &ue) && !errors.Is(err, ErrNoDatapath)
		}},
	} {
		sock := serve(t, func(req []byte) []byte {
			id := strings.TrimSuffix(strings.SplitN(string(req), `"id":`, 2)[1], "}")
			return []byte(`{"id":` + id + `,"result":null,"error":"` + tc.message + `"}`)
		})
		if _, err := PMDRxqShow(t.Context(), sock); !tc.wantErr(err) {
			t.Errorf("error %q: err = %v", tc.message, err)
		}
	}
}
