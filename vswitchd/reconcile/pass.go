package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/writer"
)

// pass is the body of Reconcile, run as the only writer.
func (r *Reconciler) pass(ctx context.Context) error {
	r.mu.Lock()
	desired, version := r.desired, r.version
	repairing := r.applied == version // nothing new to apply: whatever is written is drift
	r.mu.Unlock()

	owned := r.c.Owned()
	desired, unheld := r.merge(desired, owned)
	var foreign []foreignWrite // owned columns someone else changed, for conflict detection
	if repairing {
		foreign = foreignWrites(r.c, desired, unheld)
	}
	ownedGlobal, err := r.c.OwnedGlobal(ctx)
	if err != nil {
		return r.fail(fmt.Errorf("reconcile: reading owned other_config: %w", err))
	}
	gen := r.generation(owned, version)

	want := wanted(desired)
	have := map[string]bool{}
	for _, o := range owned {
		have[tableKind(o.Table)+"/"+o.Name] = true
	}
	var deleted, missing []string
	var items []item
	// Deletions first: stale ports, then stale bridges, then other_config keys. A port named
	// like an owned bridge is that bridge's local port: it goes with its bridge, and stays
	// when the bridge's deletion is refused.
	for _, o := range owned {
		k := tableKind(o.Table) + "/" + o.Name
		if o.Table == "Port" && !want[k] && !want["bridge/"+o.Name] && !have["bridge/"+o.Name] {
			items = append(items, item{kind: model.KindPort, name: o.Name, del: true, unit: o.Tags.Get(UnitKey),
				add: func(t *ovsdb.Txn) { t.DeletePort("", o.Name) }})
			deleted = append(deleted, k)
		}
	}
	for _, o := range owned {
		if k := "bridge/" + o.Name; o.Table == "Bridge" && !want[k] {
			items = append(items, item{kind: model.KindBridge, name: o.Name, del: true, unit: o.Tags.Get(UnitKey),
				add: func(t *ovsdb.Txn) { t.DeleteBridge(o.Name) }})
			deleted = append(deleted, k)
		}
	}
	var unset []string
	for k := range ownedGlobal {
		if _, ok := desired.OtherConfig[k]; !ok {
			unset = append(unset, k)
		}
	}
	slices.Sort(unset)
	if len(unset) > 0 {
		items = append(items, item{kind: kindGlobal, name: ".", del: true,
			add: func(t *ovsdb.Txn) { t.UnsetGlobal(unset...) }})
		deleted = append(deleted, "other_config/"+fmt.Sprint(unset))
	}
	if len(desired.OtherConfig) > 0 {
		items = append(items, item{kind: kindGlobal, name: ".",
			add: func(t *ovsdb.Txn) { t.SetGlobal(desired.OtherConfig) }})
	}
	for _, b := range desired.Bridges {
		if _, left := unheld[b.Name]; !left {
			items = append(items, item{kind: model.KindBridge, name: b.Name, ifaces: []string{b.Name}, unit: b.ExternalIDs[UnitKey],
				add: func(t *ovsdb.Txn) { t.EnsureBridge(writer.BridgeSpec(b), nil) }})
			if !have["bridge/"+b.Name] {
				missing = append(missing, "bridge/"+b.Name)
			}
		}
		for i, p := range b.Ports {
			// The closure indexes b.Ports rather than capture p: a port copied to the heap for
			// each item weighs ~150 bytes per port during every pass.
			it := item{kind: model.KindPort, name: p.Name, bridge: b.Name, unit: p.ExternalIDs[UnitKey],
				add: func(t *ovsdb.Txn) { t.EnsurePort(writer.PortSpec(b.Name, b.Ports[i])) }}
			for _, in := range p.Interfaces {
				it.ifaces = append(it.ifaces, in.Name)
			}
			items = append(items, it)
			if !have["port/"+p.Name] {
				missing = append(missing, "port/"+p.Name)
			}
		}
	}

	res, refused, err := r.commitIsolated(ctx, gen, items)
	var applyErr *ovsdb.ApplyError
	if err != nil && !errors.As(err, &applyErr) {
		return r.fail(fmt.Errorf("reconcile: pass (generation %d): %w", gen, err))
	}
	r.mu.Lock()
	drift := r.applied == version
	r.applied = version
	r.mu.Unlock()
	if res != nil && res.Ops > 0 {
		switch {
		case drift:
			r.log.Warn("reconcile: repaired drift", "generation", gen, "recreated", logList(missing),
				"pruned", logList(deleted), "changed_interfaces", logList(ifaceNames(res.Interfaces)), "ops", res.Ops)
		default:
			r.log.Info("reconcile: applied desired state", "generation", gen, "created", logList(missing),
				"pruned", logList(deleted), "ops", res.Ops)
		}
	}
	objErr, partial := refusedStatus(refused)
	foreign = slices.DeleteFunc(foreign, func(w foreignWrite) bool {
		_, left := objErr[string(w.kind)+"/"+w.name]
		return left
	})
	r.conf.repaired(time.Now(), foreign)
	conflict := r.conf.snapshot()
	if partial != nil {
		partial = fmt.Errorf("reconcile: pass (generation %d) applied everything else: %w", gen, partial)
		r.log.Warn("reconcile: objects refused, the rest applied", "generation", gen, "err", partial)
	}
	r.mu.Lock()
	r.passErr, r.lastErr, r.objErr, r.conflict = nil, partial, objErr, conflict
	r.mu.Unlock()
	r.refresh()
	return nil
}

// merge returns desired plus Options.Extra's objects (desired itself when there are none), and
// Options.Unheld's bridges among them.
func (r *Reconciler) merge(desired config.DesiredState, owned []ovsdb.OwnedRow) (config.DesiredState, map[string]string) {
	if r.opts.Extra == nil {
		return desired, nil
	}
	extra := r.opts.Extra(owned)
	if len(extra) == 0 {
		return desired, nil
	}
	var unheld map[string]string
	if r.opts.Unheld != nil {
		unheld = r.opts.Unheld(extra)
	}
	out := config.DesiredState{OtherConfig: desired.OtherConfig, Bridges: slices.Clone(desired.Bridges)}
	idx := map[string]int{}
	for i, b := range out.Bridges {
		idx[b.Name] = i
	}
	touched := map[int]bool{}
	for _, b := range extra {
		i, ok := idx[b.Name]
		if !ok {
			idx[b.Name] = len(out.Bridges)
			out.Bridges = append(out.Bridges, b)
			continue
		}
		if len(b.Ports) == 0 {
			continue
		}
		if !touched[i] {
			out.Bridges[i].Ports = slices.Clone(out.Bridges[i].Ports)
			touched[i] = true
		}
		out.Bridges[i].Ports = append(out.Bridges[i].Ports, b.Ports...)
	}
	for i := range touched {
		slices.SortFunc(out.Bridges[i].Ports, func(a, b model.Port) int { return cmp.Compare(a.Name, b.Name) })
	}
	slices.SortFunc(out.Bridges, func(a, b model.Bridge) int { return cmp.Compare(a.Name, b.Name) })
	return out, unheld
}

// generation returns the generation for the desired state version: one more than the highest
// owned generation on the first pass, incremented when the version changes.
func (r *Reconciler) generation(owned []ovsdb.OwnedRow, version int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen == 0 {
		var hi int64
		for _, o := range owned {
			hi = max(hi, o.Generation)
		}
		r.gen, r.genVer = hi+1, version
	} else if r.genVer != version {
		r.gen++
		r.genVer = version
	}
	return r.gen
}

func (r *Reconciler) fail(err error) error {
	r.mu.Lock()
	r.passErr, r.lastErr = err, err
	r.mu.Unlock()
	r.refresh()
	return err
}

// refusedAs returns s as an error with the reason the last pass left its object out, if it did.
func refusedAs(s model.Status, objErr map[string]string) model.Status {
	if msg, ok := objErr[s.Key()]; ok {
		s.State, s.Ofport, s.Error = model.StateError, 0, msg
	}
	return s
}

func wanted(d config.DesiredState) map[string]bool {
	w := map[string]bool{}
	for _, b := range d.Bridges {
		w["bridge/"+b.Name] = true
		w["port/"+b.Name] = true // the bridge's local port
		w["interface/"+b.Name] = true
		for _, p := range b.Ports {
			w["port/"+p.Name] = true
			for _, i := range p.Interfaces {
				w["interface/"+i.Name] = true
			}
		}
	}
	return w
}

func tableKind(table string) string {
	switch table {
	case "Bridge":
		return string(model.KindBridge)
	case "Port":
		return string(model.KindPort)
	case "Interface":
		return string(model.KindInterface)
	}
	return table
}

func ifaceNames(states []ovsdb.InterfaceState) []string {
	var out []string
	for _, s := range states {
		out = append(out, s.Name)
	}
	return out
}
