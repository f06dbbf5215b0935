package dsaplugin

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// pmd is a PMD thread on core polling queue 0 of ports.
func pmd(core, numa int, ports ...string) dsa.PMD {
	p := dsa.PMD{Core: core, NUMA: numa}
	for _, port := range ports {
		p.Rxqs = append(p.Rxqs, dsa.PMDRxq{Port: port, Enabled: true, UsagePct: -1})
	}
	return p
}

// pmdsView is the PMD view of pmds with the library's assignment over wqs.
func pmdsView(wqs []dsa.WQRef, pmds ...dsa.PMD) pmdView {
	return pmdView{pmds: pmds, assign: dsa.AssignPMDs(pmds, wqs)}
}

// TestStatusOf: each reason an interface's copies are or are not offloaded gets its own level,
// summary and details, in the order a user has to fix them.
func TestStatusOf(t *testing.T) {
	wqs := []dsa.WQRef{{Name: "wq0.0", Device: "dsa0", NUMA: 0}, {Name: "wq0.1", Device: "dsa0", NUMA: 0}}
	stock := dsa.ProbeOVS([]string{"dpif-netdev/pmd-rxq-show", "version"}, nil, "3.1.0", "DPDK 22.11.1")
	capable := dsa.ProbeOVS([]string{"dpif-netdev/pmd-rxq-show", dsa.VhostAsyncThreshCommand, "version"}, nil, "3.1.0", "DPDK 22.11.1")
	on := api.HostFacts{OtherConfig: map[string]string{dsa.VhostAsyncSupportKey: "true"}}
	two := pmdsView(wqs, pmd(2, 0, "vhu0"), pmd(4, 0, "vhu1"))
	// copying is pv with DMA copies counted by the running ovs-vswitchd.
	copying := func(pv pmdView) pmdView { pv.copies, pv.dma = true, "seen (1 vhost_async counters)"; return pv }
	pending := two
	pending.pending = true
	cases := []struct {
		name  string
		iface string
		v     view
		facts api.HostFacts
		pv    pmdView
		level api.StatusLevel
		says  []string
		d     map[string]string
	}{
		{"off", "vhu0", view{mode: AsyncOff, wqs: wqs, ovs: capable}, on, two, api.StatusInfo,
			[]string{"CPU copy: vhost async is off"}, map[string]string{"reason": "asyncMode off", "mode": "off"}},
		{"no wqs", "vhu0", view{mode: AsyncAuto, ovs: capable}, on, two, api.StatusWarning,
			[]string{"no DSA work queue is prepared"}, map[string]string{"reason": "no work queue"}},
		{"stock", "vhu1", view{mode: AsyncAuto, wqs: wqs, ovs: stock}, api.HostFacts{}, two, api.StatusWarning,
			[]string{"CPU copy: this ovs-vswitchd has no vhost async support (DSA prepared, unused)", "PMD core 4 would use wq0.1"},
			map[string]string{"reason": "OVS_NO_VHOST_ASYNC", "pmd_core": "4", "wq": "wq0.1", "numa": "0", "mode": "auto"}},
		{"stock, pmds unreadable", "vhu1", view{mode: AsyncAuto, wqs: wqs, ovs: stock}, api.HostFacts{}, pmdView{err: "connection refused"}, api.StatusWarning,
			[]string{"CPU copy: this ovs-vswitchd has no vhost async support"}, map[string]string{"pmds": "unreadable: connection refused"}},
		{"restart pending", "vhu0", view{mode: AsyncAuto, wqs: wqs, ovs: capable}, on, pending, api.StatusWarning,
			[]string{"CPU copy until ovs-vswitchd restarts", "PMD core 2 would use wq0.0"}, map[string]string{"reason": "restart pending"}},
		{"pmds unreadable", "vhu0", view{mode: AsyncAuto, wqs: wqs, ovs: capable}, on, pmdView{err: "no socket"}, api.StatusWarning,
			[]string{"cannot read the PMD threads", "no socket"}, map[string]string{"reason": "pmds unreadable"}},
		{"not polled", "vhu9", view{mode: AsyncAuto, wqs: wqs, ovs: capable}, on, two, api.StatusInfo,
			[]string{"no PMD thread polls this port yet"}, map[string]string{"reason": "not polled"}},
		{"threshold unverified", "vhu0", view{mode: AsyncAuto, wqs: wqs, ovs: capable, thresh: threshold{asked: 256, err: "read back 128"}}, on, two, api.StatusWarning,
			[]string{"DMA copy not verified", "read back 128"}, map[string]string{"reason": "threshold not verified"}},
		{"accelerated", "vhu1", view{mode: AsyncAuto, wqs: wqs, ovs: capable, thresh: threshold{asked: 256, readBack: 256}}, on, copying(two), api.StatusInfo,
			[]string{"accelerated: PMD core 4 (NUMA 0) uses wq0.1"}, map[string]string{"reason": "accelerated", "wq": "wq0.1", "pmd_core": "4", "numa": "0", "threshold": "256"}},
		{"enabled, no copies yet", "vhu1", view{mode: AsyncAuto, wqs: wqs, ovs: capable, thresh: threshold{asked: 256, readBack: 256}}, on, two, api.StatusInfo,
			[]string{"vhost async enabled, no DMA copies observed yet: PMD core 4 (NUMA 0) uses wq0.1"}, map[string]string{"reason": "no DMA copies yet"}},
		{"two pmds", "vhu0", view{mode: AsyncRequire, wqs: wqs, ovs: capable}, on, copying(pmdsView(wqs, pmd(2, 0, "vhu0"), pmd(4, 0, "vhu0"))), api.StatusInfo,
			[]string{"accelerated: PMD core 2 (NUMA 0) uses wq0.0; PMD core 4 (NUMA 0) uses wq0.1"}, map[string]string{"wq": "wq0.0,wq0.1", "pmd_core": "2,4"}},
		{"too few wqs", "vhu2", view{mode: AsyncAuto, wqs: wqs, ovs: capable}, on, pmdsView(wqs, pmd(2, 0, "vhu0"), pmd(4, 0, "vhu1"), pmd(6, 0, "vhu2")), api.StatusWarning,
			[]string{"CPU copy on PMD core 6 (NUMA 0): no work queue left", "DSA_TOO_FEW_WQS: 3 PMD threads, 2 work queues"}, map[string]string{"reason": "DSA_TOO_FEW_WQS"}},
		{"numa", "vhu1", view{mode: AsyncAuto, wqs: wqs[:1], ovs: capable}, on, copying(pmdsView(wqs[:1], pmd(3, 1, "vhu1"))), api.StatusWarning,
			[]string{"accelerated, with warnings: PMD core 3 (NUMA 1) uses wq0.0 of dsa0 on NUMA 0, across sockets (DSA_NUMA)"}, map[string]string{"reason": "DSA_NUMA", "numa": "1"}},
	}
	for _, c := range cases {
		st := bounded(statusOf(c.iface, c.v, c.facts, c.pv))
		if st.Level != c.level {
			t.Errorf("%s: level %s, want %s (%q)", c.name, st.Level, c.level, st.Summary)
		}
		for _, s := range c.says {
			if !strings.Contains(st.Summary, s) {
				t.Errorf("%s: summary %q lacks %q", c.name, st.Summary, s)
			}
		}
		for k, v := range c.d {
			if st.Details[k] != v {
				t.Errorf("%s: details[%s] = %q, want %q (%v)", c.name, k, st.Details[k], v, st.Details)
			}
		}
		if err := api.ValidateChanges(api.PortEventBatch{Events: []api.PortEvent{{Kind: api.EventAdded, Interface: c.iface}}},
			[]api.InterfaceChange{{Interface: c.iface, Status: &st}}); err != nil {
			t.Errorf("%s: the daemon would refuse the status: %v", c.name, err)
		}
	}
}

// TestBounded: a status past the contract's bounds (a long error, control characters, too
// many details) is cut to what the daemon accepts, at rune boundaries.
func TestBounded(t *testing.T) {
	d := map[string]string{}
	for i := range 40 {
		d[strings.Repeat("k", i+1)] = strings.Repeat("é", 300)
	}
	st := bounded(api.InterfaceStatus{Level: api.StatusWarning, Summary: strings.Repeat("ü", 600) + "\nline two\x00", Details: d})
	if len(st.Summary) > api.MaxStatusSummaryBytes || len(st.Details) != api.MaxStatusDetails || !strings.HasSuffix(st.Summary, "…") {
		t.Errorf("summary %d bytes, %d details", len(st.Summary), len(st.Details))
	}
	err := api.ValidateChanges(api.PortEventBatch{Events: []api.PortEvent{{Kind: api.EventAdded, Interface: "vhu0"}}},
		[]api.InterfaceChange{{Interface: "vhu0", Status: &st}})
	if err != nil {
		t.Error(err)
	}
	short := bounded(api.InterfaceStatus{Level: api.StatusInfo, Summary: "a\tb\nc", Details: map[string]string{"k": "x\ny"}})
	if short.Summary != "a b c" || short.Details["k"] != "x y" {
		t.Errorf("control characters kept: %q %q", short.Summary, short.Details["k"])
	}
}
