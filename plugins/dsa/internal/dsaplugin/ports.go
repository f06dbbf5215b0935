package dsaplugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// OnPortEvents answers every vhost-user interface of the batch with its DSA status (see
// statusOf). The PMD threads are read once per batch from ovs-vswitchd (pmd-rxq-show through
// its unixctl socket), so a resync or any port change re-runs the PMD/WQ count and NUMA
// checks. It never asks for other_config changes.
func (p *Plugin) OnPortEvents(ctx context.Context, batch api.PortEventBatch) ([]api.InterfaceChange, error) {
	// The daemon drops the status of a removed interface itself; the others get one each.
	var live []api.PortEvent
	for _, e := range batch.Events {
		if e.Kind != api.EventRemoved {
			live = append(live, e)
		}
	}
	p.mu.Lock()
	configured, cfg, facts, m, v := p.configured, p.cfg, p.facts, p.machine, p.view
	p.mu.Unlock()
	if !configured || len(live) == 0 {
		return nil, ctx.Err()
	}
	sock := socketOf(cfg, facts)
	pv := pmdView{pending: p.stillPending(v, facts.OVSRunDir)}
	active := v.mode != AsyncOff && v.ovs.VhostAsync && !pv.pending
	if active {
		// Evidence from the running process: its threshold (set again when a restarted
		// ovs-vswitchd forgot it) and, below, its vhost_async_* counters.
		v.thresh = p.observeThreshold(ctx, sock, v)
	}
	if !sock.known() {
		pv.err = "the daemon gave no OVS run directory (and ovs.unixctl is not set)"
	} else if pmds, err := p.readPMDs(ctx, sock); err != nil {
		pv.err = err.Error()
	} else {
		pv.pmds = pmds
		pv.assign = dsa.AssignPMDs(pmds, v.wqs)
	}
	if active {
		pv.dma, pv.copies = p.dmaCopies(ctx, sock)
	}
	sim := ""
	if m != nil && m.Simulated != "" {
		sim = m.Simulated
	}
	changes := make([]api.InterfaceChange, 0, len(live))
	for _, e := range live {
		st := statusOf(e.Interface, v, facts, pv)
		if sim != "" {
			st.Summary = "SIMULATED DSA: " + st.Summary
			st.Details["simulated"] = sim
		}
		st = bounded(st)
		changes = append(changes, api.InterfaceChange{Interface: e.Interface, Status: &st})
	}
	return changes, ctx.Err()
}

// pmdView is ovs-vswitchd's PMD threads as read for one batch, with the work queue assigned to
// each, or why they could not be read.
type pmdView struct {
	pmds   []dsa.PMD
	assign dsa.Assignment
	err    string
	// dma is what coverage/show's vhost_async_* counters say on a capable build ("" when not
	// read): DMA copies seen, none yet, or why it could not be read.
	dma string
	// copies: the running ovs-vswitchd's vhost_async_* counters are nonzero.
	copies bool
	// pending: vhost-async-support=true is contributed and the ovs-vswitchd that runs started
	// before it (same pid).
	pending bool
}

// polling returns the PMD threads (core ids, in order) with an rx queue of iface.
func (pv pmdView) polling(iface string) []dsa.PMD {
	var out []dsa.PMD
	for _, pmd := range pv.pmds {
		if slices.ContainsFunc(pmd.Rxqs, func(q dsa.PMDRxq) bool { return q.Port == iface }) {
			out = append(out, pmd)
		}
	}
	return out
}

// assignment returns the work queue assignment of the PMD on core.
func (pv pmdView) assignment(core int) (dsa.PMDAssignment, bool) {
	for _, a := range pv.assign.PMDs {
		if a.Core == core {
			return a, true
		}
	}
	return dsa.PMDAssignment{}, false
}

// statusOf is the DSA status of one vhost-user interface: whether its copies are offloaded,
// by which work queue on which PMD thread, and if not, why — in the order a user has to fix
// things: asyncMode off, no work queue prepared, an ovs-vswitchd without vhost async, a restart
// pending, PMDs unreadable, no PMD polling the port, a threshold not verified, then per PMD a
// missing queue (DSA_TOO_FEW_WQS) or a cross-NUMA one (DSA_NUMA).
func statusOf(iface string, v view, facts api.HostFacts, pv pmdView) api.InterfaceStatus {
	d := map[string]string{"mode": v.mode}
	polling := pv.polling(iface)
	// What the port's PMDs use, or would use on a capable ovs-vswitchd.
	var cores, numas, wqs []string
	for _, pmd := range polling {
		cores = append(cores, strconv.Itoa(pmd.Core))
		numas = append(numas, strconv.Itoa(pmd.NUMA))
		if a, ok := pv.assignment(pmd.Core); ok && a.WQ != nil {
			wqs = append(wqs, a.WQ.Name)
		}
	}
	if len(cores) > 0 {
		d["pmd_core"] = strings.Join(cores, ",")
		d["numa"] = strings.Join(slices.Compact(numas), ",")
	}
	if len(wqs) > 0 {
		d["wq"] = strings.Join(wqs, ",")
	}
	cpu := func(level api.StatusLevel, reason, summary string) api.InterfaceStatus {
		d["reason"] = reason
		if pv.err != "" {
			d["pmds"] = "unreadable: " + pv.err
		}
		return api.InterfaceStatus{Level: level, Summary: summary, Details: d}
	}
	would := ""
	if len(wqs) > 0 {
		would = "; its PMD core " + d["pmd_core"] + " would use " + d["wq"]
	}
	switch {
	case v.mode == AsyncOff:
		return cpu(api.StatusInfo, "asyncMode off", "CPU copy: vhost async is off in the dsa plugin's configuration (ovs.asyncMode off)")
	case len(v.wqs) == 0:
		return cpu(api.StatusWarning, "no work queue",
			"CPU copy: no DSA work queue is prepared (the dsa plugin's configuration lists no usable device)")
	case !v.ovs.VhostAsync:
		return cpu(api.StatusWarning, string(dsa.CodeOVSNoVhostAsync),
			"CPU copy: this ovs-vswitchd has no vhost async support (DSA prepared, unused)"+would)
	case pv.pending:
		return cpu(api.StatusWarning, "restart pending",
			"CPU copy until ovs-vswitchd restarts: "+dsa.VhostAsyncSupportKey+"=true is contributed and read at start only"+would)
	case pv.err != "":
		return cpu(api.StatusWarning, "pmds unreadable",
			"DSA state unknown: cannot read the PMD threads ("+PMDRxqShowCommand+"): "+pv.err)
	case len(polling) == 0:
		return cpu(api.StatusInfo, "not polled",
			"no PMD thread polls this port yet (not in "+PMDRxqShowCommand+"), so no work queue serves it")
	case v.thresh.err != "":
		return cpu(api.StatusWarning, "threshold not verified",
			"DMA copy not verified: the running ovs-vswitchd did not confirm its vhost async threshold: "+v.thresh.err)
	}
	level, reason := api.StatusInfo, "accelerated"
	var parts []string
	allCPU := true
	for _, pmd := range polling {
		a, ok := pv.assignment(pmd.Core)
		switch {
		case !ok || a.WQ == nil:
			level, reason = api.StatusWarning, string(dsa.CodeTooFewWQs)
			parts = append(parts, fmt.Sprintf("CPU copy on PMD core %d (NUMA %d): no work queue left for it (%s: %d PMD threads, %d work queues)",
				pmd.Core, pmd.NUMA, dsa.CodeTooFewWQs, len(pv.pmds), len(v.wqs)))
		case !a.SameNUMA:
			allCPU = false
			level, reason = api.StatusWarning, string(dsa.CodeNUMA)
			parts = append(parts, fmt.Sprintf("PMD core %d (NUMA %d) uses %s of %s on NUMA %d, across sockets (%s)",
				pmd.Core, pmd.NUMA, a.WQ.Name, a.WQ.Device, a.WQ.NUMA, dsa.CodeNUMA))
		default:
			allCPU = false
			parts = append(parts, fmt.Sprintf("PMD core %d (NUMA %d) uses %s", pmd.Core, pmd.NUMA, a.WQ.Name))
		}
	}
	prefix := "accelerated: "
	switch {
	case allCPU:
		prefix = ""
	case !pv.copies:
		// The running process has vhost async and answers for its threshold, but no DMA copy
		// was counted yet: not "accelerated" until its counters move.
		prefix = "vhost async enabled, no DMA copies observed yet: "
		if reason == "accelerated" {
			reason = "no DMA copies yet"
		}
	case level == api.StatusWarning:
		prefix = "accelerated, with warnings: "
	}
	d["reason"] = reason
	if pv.dma != "" {
		d["dma_copies"] = pv.dma
	}
	if v.thresh.asked > 0 {
		d["threshold"] = strconv.Itoa(v.thresh.readBack)
	}
	return api.InterfaceStatus{Level: level, Summary: prefix + strings.Join(parts, "; "), Details: d}
}

// bounded cuts a status to the contract's bounds (api.MaxStatusSummaryBytes and the details'
// limits), at rune boundaries, with control characters (from errors quoted in it) turned into
// spaces and NULs dropped.
func bounded(s api.InterfaceStatus) api.InterfaceStatus {
	s.Summary = cut(clean(s.Summary), api.MaxStatusSummaryBytes)
	d := make(map[string]string, len(s.Details))
	for _, k := range slices.Sorted(maps.Keys(s.Details)) {
		if len(d) == api.MaxStatusDetails {
			break
		}
		d[cut(clean(k), api.MaxStatusKeyBytes)] = cut(clean(s.Details[k]), api.MaxStatusValueBytes)
	}
	s.Details = d
	return s
}

// cut returns s cut to at most n bytes, at a rune boundary, "…" marking a cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	s = s[:n-len(ell)]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + ell
}

// clean returns s as valid UTF-8 without control characters: NULs dropped, the others spaces.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == 0:
			return -1
		case unicode.IsControl(r):
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}
