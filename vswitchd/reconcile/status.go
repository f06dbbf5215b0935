package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// Generation returns the generation the reconciler tags rows with (at least 1), for other
// writers of the owner's rows.
func (r *Reconciler) Generation() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.gen, 1)
}

// Counts returns how many objects are in each state (cheaper than Status: no copy, no sort).
func (r *Reconciler) Counts() map[model.State]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[model.State]int{}
	for _, s := range r.status {
		out[s.State]++
	}
	return out
}

// StatusOf returns the status of one object by key ("port/NAME"…).
func (r *Reconciler) StatusOf(key string) (model.Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status.get(key)
}

// LastError returns the error of the last pass, nil when it succeeded (or none ran yet).
func (r *Reconciler) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// SetDown tells the reconciler that ovs-vswitchd is not running (why, non-empty) or runs again
// (""). While it is down every interface's status is an error with that message, and the
// statuses of bridges and ports follow.
func (r *Reconciler) SetDown(why string) {
	r.mu.Lock()
	changed := r.down != why
	r.down = why
	r.mu.Unlock()
	if changed {
		r.refresh()
	}
}

// lastRefreshCost is how long the last status refresh took.
func (r *Reconciler) lastRefreshCost() time.Duration { return time.Duration(r.refreshCost.Load()) }

// Refresh recomputes the statuses from the client's cache now (for a writer that just
// changed rows and wants the statuses to show it).
func (r *Reconciler) Refresh() { r.refresh() }

// refresh recomputes every status from the client's cache and notifies watchers of changes.
func (r *Reconciler) refresh() {
	// One refresh at a time: a slower one computed from an older cache must not overwrite
	// the result of a newer one.
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	start := time.Now()
	defer func() { r.refreshCost.Store(int64(time.Since(start))) }()
	r.mu.Lock()
	desired, passErr, down, objErr, conflict := r.desired, r.passErr, r.down, r.objErr, r.conflict
	r.mu.Unlock()
	desired, unheld := r.merge(desired, nil)

	lookup := r.c.Interface
	if bulk, ok := r.c.(interface {
		InterfaceStates() map[string]ovsdb.InterfaceState
	}); ok { // one pass over the cache instead of a copied row per interface
		all := bulk.InterfaceStates()
		lookup = func(name string) (ovsdb.InterfaceState, error) {
			if st, ok := all[name]; ok {
				return st, nil
			}
			return ovsdb.InterfaceState{}, ovsdb.ErrNotFound
		}
	}
	var bridgeErrs map[string]string // bridges ovs-vswitchd failed to create
	if be, ok := r.c.(interface{ BridgeErrors() map[string]string }); ok && down == "" {
		bridgeErrs = be.BridgeErrors()
	}
	exports := r.bridgeExports()
	var qoses map[string]ovsdb.PortQoS
	var mirrors map[string]map[string]ovsdb.MirrorHave // read on first need
	if hasQoS(desired.Bridges) {
		qoses = r.portQoSes()
	}
	next := make(statusSet, 0, len(r.status))
	put := func(s model.Status) { next = append(next, s) }
	units := map[string][]string{} // UnitKey value → the status keys of its other rows
	for _, b := range desired.Bridges {
		if u := b.ExternalIDs[UnitKey]; u != "" {
			units[u] = append(units[u], "bridge/"+b.Name)
		}
		local := r.ifaceStatus(lookup, b.Name, b.Name, passErr, down)
		bs := model.Status{Kind: model.KindBridge, Name: b.Name, State: local.State, Error: local.Error}
		failed, bridgeFailed := bridgeErrs[b.Name]
		if bridgeFailed && bs.State == model.StatePending {
			bs.State, bs.Error = model.StateError, failed
		}
		if why, left := unheld[b.Name]; left {
			bs.State, bs.Error = model.StateError, why
		}
		bs = refusedAs(bs, objErr)
		for _, es := range exportStatuses(b, exports[b.Name], bridgeError(bs)) {
			put(es)
		}
		// A conflict over a column (see Conflict) is the bridge's error, not its exports'.
		if msg, fought := conflict[bs.Key()]; fought && bs.State != model.StateError {
			bs.State, bs.Error = model.StateError, msg
		}
		put(bs)
		for _, p := range b.Ports {
			if u := p.ExternalIDs[UnitKey]; u != "" && u != p.Name {
				units[u] = append(units[u], "port/"+p.Name)
			}
			ps := model.Status{Kind: model.KindPort, Name: p.Name, Bridge: b.Name, State: model.StateReady}
			if msg, ok := objErr[ps.Key()]; ok {
				ps.State, ps.Error = model.StateError, msg
			}
			for _, i := range p.Interfaces {
				is := r.ifaceStatus(lookup, b.Name, i.Name, passErr, down)
				if bridgeFailed && is.State == model.StatePending {
					is.State, is.Error = model.StateError, fmt.Sprintf("its bridge %q does not exist in ovs-vswitchd: %s", b.Name, failed)
				}
				is = refusedAs(is, objErr)
				put(is)
				switch {
				case is.State == model.StateError && ps.State != model.StateError:
					ps.State, ps.Error = model.StateError, is.Error
				case is.State == model.StatePending && ps.State == model.StateReady:
					ps.State = model.StatePending
				}
			}
			put(ps)
			if p.QoS != nil {
				have, ok := qoses[p.Name]
				put(qosStatus(b.Name, p, have, ok, bridgeError(ps)))
			}
		}
		if len(b.Mirrors) > 0 {
			if mirrors == nil {
				mirrors = r.bridgeMirrors()
			}
			for _, ms := range mirrorStatuses(b, mirrors[b.Name], bridgeError(bs)) {
				put(ms)
			}
		}
	}
	next = next.settle()
	foldUnits(next, units)
	// An object no longer desired whose deletion the last pass refused is still in OVSDB: it
	// keeps a status, an error saying why it stays and what releases it, instead of vanishing
	// from the list as if it were gone.
	refused := len(next)
	for key, msg := range objErr {
		kind, name, ok := strings.Cut(key, "/")
		if _, desired := next[:refused].find(model.Kind(kind), name); ok && !desired && name != "" {
			put(model.Status{Kind: model.Kind(kind), Name: name, State: model.StateError, Error: msg})
		}
	}
	if len(next) > refused {
		next = next.settle()
	}

	r.mu.Lock()
	changed := changes(r.status, next)
	if len(changed) == 0 {
		r.mu.Unlock()
		return
	}
	r.status = next
	close(r.watch)
	r.watch = make(chan struct{})
	r.mu.Unlock()
	if r.opts.OnChange != nil {
		slices.SortFunc(changed, func(a, b model.Status) int { return cmp.Compare(a.Key(), b.Key()) })
		r.opts.OnChange(changed)
	}
}

func (r *Reconciler) ifaceStatus(lookup func(string) (ovsdb.InterfaceState, error), bridge, name string, passErr error, down string) model.Status {
	s := model.Status{Kind: model.KindInterface, Name: name, Bridge: bridge, State: model.StatePending}
	st, err := lookup(name)
	if err == nil && !st.Owned {
		err = ovsdb.ErrNotOwned // a row of someone else's with our name tells nothing about ours
	}
	switch {
	case err == nil && st.Error != "":
		s.State, s.Error = model.StateError, st.Error
	case err == nil && st.Ofport > 0:
		s.State, s.Ofport = model.StateReady, st.Ofport
	case err == nil && st.Ofport < 0:
		s.State, s.Error = model.StateError, "ovs-vswitchd could not set it up (ofport -1)"
	}
	if s.State == model.StatePending && passErr != nil {
		s.State, s.Error = model.StateError, passErr.Error()
	}
	if down != "" && s.State != model.StateError {
		s.State, s.Ofport, s.Error = model.StateError, 0, down
	}
	return s
}

// bridgeError is a bridge status's error when it is in error for its own sake (not a pending
// local interface), "" otherwise.
func bridgeError(bs model.Status) string {
	if bs.State == model.StateError {
		return bs.Error
	}
	return ""
}

// foldUnits makes the status of each unit's port (the port named like the unit) its unit's:
// in error when one of the unit's rows is (naming it), pending when one is pending, ready when
// all are.
func foldUnits(next statusSet, units map[string][]string) {
	for u, keys := range units {
		at, ok := next.find(model.KindPort, u)
		if !ok {
			continue
		}
		anchor := next[at]
		slices.Sort(keys)
		for _, k := range keys {
			s, ok := next.get(k)
			switch {
			case !ok:
			case s.State == model.StateError && anchor.State != model.StateError:
				anchor.State, anchor.Error = model.StateError, fmt.Sprintf("%s of this object: %s", k, s.Error)
			case s.State == model.StatePending && anchor.State == model.StateReady:
				anchor.State = model.StatePending
			}
		}
		next[at] = anchor
	}
}

// hasQoS reports whether a desired port has a qos (so a refresh without any reads no QoS rows).
func hasQoS(bs []model.Bridge) bool {
	for _, b := range bs {
		for _, p := range b.Ports {
			if p.QoS != nil {
				return true
			}
		}
	}
	return false
}
