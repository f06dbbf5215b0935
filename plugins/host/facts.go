package host

import (
	"context"
	"errors"
	"slices"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// RefreshFacts hands the facts of the running Open vSwitch to the plugins again: it asks
// Options.Facts once, then calls Configure (with the plugin's current configuration, followed
// by Contribute as at start) on every running plugin whose last Configure had other facts.
// Facts are compared field by field, the type and command lists as sets; DataDir is the
// plugin's own and not compared. Plugins that are not running get the facts at their next
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
	var errs []error
	for _, s := range sups {
		s.mu.Lock()
		same := sameFacts(s.facts, now)
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

// sameFacts reports whether a and b describe the same Open vSwitch for a plugin: every field
// but DataDir equal, the lists equal as sets.
func sameFacts(a, b api.HostFacts) bool {
	return a.OVSVersion == b.OVSVersion && a.DPDKVersion == b.DPDKVersion && a.DPDKInitialized == b.DPDKInitialized &&
		a.OVSRunDir == b.OVSRunDir && a.HostVersion == b.HostVersion &&
		sameSet(a.IfaceTypes, b.IfaceTypes) && sameSet(a.DatapathTypes, b.DatapathTypes) && sameSet(a.AppctlCommands, b.AppctlCommands)
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
