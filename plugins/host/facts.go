package host

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// RefreshFacts hands the facts of the running Open vSwitch to the plugins again: it asks
// Options.Facts once, then calls Configure (with the plugin's current configuration, followed
// by Contribute as at start) on every running plugin whose last Configure had other facts.
// Facts are compared field by field, the type and command lists as sets; DataDir is the
// plugin's own and not compared. OtherConfig is compared key by key, except that a key holding
// the value the daemon writes for the plugins' GlobalConfig contributions (as the last
// GlobalConfig merged them) is no news: a plugin's own contribution landing in
// Open_vSwitch.other_config does not configure it again, so Configure → Contribute → write →
// Configure cannot loop, whatever a plugin contributes. An operator's change of any key (or of
// a contributed key to another value) does, and so does a change of the daemon's own part of a
// dpdk-extra merged with the plugins' fragments (its configuration's dpdk-extra). Plugins that are not running get the facts at their next
// start; a plugin starting while the facts change is caught by the next call. It returns the
// plugins it configured again and, joined, the errors of those that refused (they keep
// running, with the new facts recorded; the refusal is in their Status.LastError). Without
// Options.Facts or a running plugin it does nothing and asks nothing. It is safe to call
// concurrently with the Host's other methods; concurrent RefreshFacts calls may configure a
// plugin twice (the daemon calls it from one loop).
//
// The daemon calls it when ovs-vswitchd starts again and periodically (ovs-vswitchd
// registers some commands only after start-up); after a refresh that configured a plugin
// again, the plugin's global config contribution and flows may have changed.
func (h *Host) RefreshFacts(ctx context.Context) (reconfigured []string, err error) {
	if h.opts.Facts == nil {
		return nil, nil
	}
	h.mu.Lock()
	sups := h.ordered()
	h.mu.Unlock()
	sups = slices.DeleteFunc(sups, func(s *sup) bool { return !s.running() })
	if len(sups) == 0 {
		return nil, nil
	}
	fctx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	now, err := h.opts.Facts(fctx)
	cancel()
	if err != nil {
		return nil, err
	}
	now, _ = boundFacts(now)
	h.mu.Lock()
	written, ownExtra := h.written, h.ownExtra
	h.mu.Unlock()
	var errs []error
	for _, s := range sups {
		s.mu.Lock()
		same := sameFacts(s.facts, now, written)
		if _, merged := written[DPDKExtraKey]; merged && s.ownExtra != nil && ownExtra != nil && *s.ownExtra != *ownExtra {
			same = false // the daemon's own part of the merged dpdk-extra changed
		}
		if s.ownExtra == nil {
			s.ownExtra = ownExtra
		}
		s.mu.Unlock()
		if same {
			continue
		}
		s.log.Info("Open vSwitch facts changed; configuring the plugin again")
		if err := s.reconfigure(ctx, s.entryNow()); err != nil {
			if s.running() { // a plugin that stopped meanwhile gets the facts at its next start
				errs = append(errs, err)
			}
			continue
		}
		reconfigured = append(reconfigured, s.name)
	}
	return reconfigured, errors.Join(errs...)
}

// running reports whether the plugin runs (configured, replayed, serving).
func (s *sup) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.State == StateRunning && s.inst != nil
}

// sameFacts reports whether a (the facts a plugin was configured with) and b (the facts now)
// describe the same Open vSwitch for the plugin: every field but DataDir equal, the lists
// equal as sets, and OtherConfig equal but for the keys where b holds the value written
// (the plugins' merged contribution) says.
func sameFacts(a, b api.HostFacts, written map[string]string) bool {
	return a.OVSVersion == b.OVSVersion && a.DPDKVersion == b.DPDKVersion && a.DPDKInitialized == b.DPDKInitialized &&
		a.OVSRunDir == b.OVSRunDir && a.HostVersion == b.HostVersion &&
		sameSet(a.IfaceTypes, b.IfaceTypes) && sameSet(a.DatapathTypes, b.DatapathTypes) && sameSet(a.AppctlCommands, b.AppctlCommands) &&
		sameOtherConfig(a.OtherConfig, b.OtherConfig, written)
}

// sameOtherConfig reports whether other_config now is what the plugin was handed (was), not
// counting keys now holds with the value the daemon writes for the plugins (written): those
// are the plugins' own contribution. A key that went away counts (the plugins' keys go away
// only when their contribution changed, which was a Configure already; one more Configure
// settles it).
func sameOtherConfig(was, now, written map[string]string) bool {
	for k, v := range now {
		if old, ok := was[k]; ok && old == v {
			continue
		}
		if w, ok := written[k]; ok && w == v {
			continue
		}
		return false
	}
	for k := range was {
		if _, ok := now[k]; !ok {
			return false
		}
	}
	return true
}

// boundFacts applies the map limits of package limits to f.OtherConfig, which comes from
// OVSDB where anyone may have written anything: entries whose key or value fails
// limits.CheckKey or CheckValue are left out, then, in key order, the entries past
// limits.MaxMapEntries or past limits.MaxMapBytes in all. It returns f with a bounded copy
// (the caller's map is never handed on) and how many entries were left out.
func boundFacts(f api.HostFacts) (api.HostFacts, int) {
	if f.OtherConfig == nil {
		return f, 0
	}
	keys := slices.Sorted(maps.Keys(f.OtherConfig))
	out := make(map[string]string, min(len(keys), limits.MaxMapEntries))
	size, dropped := 0, 0
	for _, k := range keys {
		v := f.OtherConfig[k]
		if len(out) >= limits.MaxMapEntries || size+len(k)+len(v) > limits.MaxMapBytes ||
			limits.CheckKey("Open_vSwitch", "other_config", k) != nil || limits.CheckValue("Open_vSwitch", "other_config", k, v) != nil {
			dropped++
			continue
		}
		out[k] = v
		size += len(k) + len(v)
	}
	f.OtherConfig = out
	return f, dropped
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
