package watch

import (
	"cmp"
	"maps"
	"slices"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// DefaultMaxStatuses bounds, per plugin, the interfaces with a status (Options.MaxStatuses).
// A status is at most about 5.7 KiB (api.MaxStatusSummaryBytes and MaxStatusDetails entries of
// MaxStatusKeyBytes and MaxStatusValueBytes), so one plugin's statuses cost at most about
// 23 MiB, and a few hundred bytes each in practice.
const DefaultMaxStatuses = 4096

// Statuses returns every watcher plugin's interface statuses (api.InterfaceChange.Status), with
// the bridge, port and owner each interface has now, sorted by plugin then interface. They
// live in memory only: an interface's status goes when the interface goes away (from OVSDB, or
// out of the plugin's filter), when a resync of the plugin does not list it, and all of a
// plugin's go when it stops or restarts (a new process starts with none).
func (d *Dispatcher) Statuses() []model.WatchedStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []model.WatchedStatus
	for name, p := range d.plugins {
		for iface, st := range p.statuses {
			ws := model.WatchedStatus{Plugin: name, Interface: iface, Level: string(st.Level), Summary: st.Summary,
				Details: maps.Clone(st.Details), Owner: model.WatchedOwnerForeign}
			if s := d.cur[iface]; s != nil {
				ws.Bridge, ws.Port = s.ev.Bridge, s.ev.Port
				switch s.ev.Owner {
				case api.OwnerOvsplane:
					ws.Owner = model.WatchedOwnerDaemon
				case api.OwnerPlugin:
					ws.Owner = model.WatchedOwnerPlugin
				}
			}
			out = append(out, ws)
		}
	}
	slices.SortFunc(out, func(a, b model.WatchedStatus) int {
		return cmp.Or(cmp.Compare(a.Plugin, b.Plugin), cmp.Compare(a.Interface, b.Interface))
	})
	return out
}

// statusOutcome is what one answer did to a plugin's statuses, for the log.
type statusOutcome struct {
	notLive, overLimit uint64
	example            string // an interface of the first refusal
}

// settleStatuses applies what a delivered batch means for p's statuses; d.mu held, p running
// and current. First the answer's statuses (answered, the answer was accepted): each replaces
// the plugin's status of a live interface of the batch, the empty one clears it; a status for
// an interface not live in the batch is refused, and so is a status for one more interface
// than Options.MaxStatuses (existing ones are still replaced and cleared). Then the batch's
// removals drop their interfaces' statuses, and the last batch of a snapshot (completes) drops
// every status of an interface the snapshot did not list.
func (d *Dispatcher) settleStatuses(p *plugin, b batch, changes []api.InterfaceChange, answered, completes bool) statusOutcome {
	var out statusOutcome
	if answered {
		live := make(map[string]bool, len(b.Events))
		for _, ev := range b.Events {
			live[ev.Interface] = ev.Kind != api.EventRemoved
		}
		refuse := func(n *uint64, iface string) {
			*n++
			if out.example == "" {
				out.example = iface
			}
		}
		for _, c := range changes {
			switch {
			case c.Status == nil:
			case !live[c.Interface] || d.cur[c.Interface] == nil:
				refuse(&out.notLive, c.Interface)
			case c.Status.IsZero():
				delete(p.statuses, c.Interface)
			default:
				if _, have := p.statuses[c.Interface]; !have && len(p.statuses) >= d.opts.MaxStatuses {
					refuse(&out.overLimit, c.Interface)
					continue
				}
				st := *c.Status
				st.Details = maps.Clone(st.Details)
				p.statuses[c.Interface] = st
			}
		}
	}
	for _, ev := range b.Events {
		if ev.Kind == api.EventRemoved {
			delete(p.statuses, ev.Interface)
		}
	}
	if completes {
		for iface := range p.statuses {
			if _, listed := p.q.known[iface]; !listed {
				delete(p.statuses, iface)
			}
		}
	}
	p.q.stats.StatusesRefused += out.notLive + out.overLimit
	return out
}

// dropStatuses forgets interface iface's statuses, every plugin's (it went away); d.mu held.
func (d *Dispatcher) dropStatuses(iface string) {
	for _, p := range d.plugins {
		delete(p.statuses, iface)
	}
}

// statusCounts counts p's statuses by level into s; d.mu held.
func (p *plugin) statusCounts(s *Stats) {
	s.Statuses = map[api.StatusLevel]int{}
	for _, st := range p.statuses {
		s.Statuses[st.Level]++
	}
}
