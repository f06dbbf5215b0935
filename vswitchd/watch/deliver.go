package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// deliver is one plugin's delivery loop: one batch at a time, the next built when the last
// was answered; a failed batch goes again after a growing pause (at once after a restart),
// merged with the states that arrived meanwhile. It returns when ctx ends.
func (d *Dispatcher) deliver(ctx context.Context, p *plugin) {
	defer close(p.done)
	pause := d.opts.RetryMin
	for {
		d.mu.Lock()
		if p.w.Running && p.q.wantResync && p.q.snap == nil {
			p.q.startResync(d.namesFor(p.w.Filter))
		}
		var (
			b  batch
			ok bool
		)
		w := p.w
		if w.Running {
			b, ok = p.q.next(d.opts.MaxBatchEvents, d.opts.MaxBatchBytes, func(name string) *state {
				if s := d.cur[name]; s != nil && matches(w.Filter, s) {
					return s
				}
				return nil
			})
		}
		d.mu.Unlock()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-p.kick:
				continue
			}
		}
		changes, err := w.Watcher.OnPortEvents(ctx, b.PortEventBatch)
		refused := refusedAnswer(err)
		delivered := err == nil || refused
		d.mu.Lock()
		completes := delivered && b.snap && b.ResyncDone && b.epoch == p.q.epoch
		p.q.done(b, delivered)
		var st statusOutcome
		if delivered && d.plugins[w.Plugin] == p && p.w.Running {
			st = d.settleStatuses(p, b, changes, err == nil, completes)
		}
		d.mu.Unlock()
		if st.notLive+st.overLimit > 0 {
			d.log.Warn("refused part of a watcher plugin's interface statuses", "plugin", w.Plugin, "not_live_in_batch", st.notLive,
				"past_max_statuses", st.overLimit, "max_statuses", d.opts.MaxStatuses, "example", st.example)
		}
		if ctx.Err() != nil {
			return
		}
		if refused {
			// The plugin handled the batch but asked for something it may not: the host
			// refused the answer whole. Delivering the batch again would only repeat that.
			d.log.Warn("watcher plugin's interface changes refused whole; the batch counts as delivered", "plugin", w.Plugin, "error", err)
			continue
		}
		if err != nil {
			d.log.Warn("watcher plugin failed a batch; it goes again, merged with newer states", "plugin", w.Plugin,
				"events", len(b.Events), "resync", b.Resync, "retry_in", pause, "error", err)
			select {
			case <-ctx.Done():
				return
			case <-p.restart:
			case <-time.After(pause):
			}
			pause = min(2*pause, d.opts.RetryMax)
			continue
		}
		pause = d.opts.RetryMin
		d.applyChanges(ctx, w.Plugin, b, changes)
	}
}

// applyChanges writes what a plugin asked for in its answer to b: other_config keys of
// interfaces live in the batch, set where no one else set them, removed only where the plugin
// set them (the ovsdb intent checks the same against the fresh cache). Changes to one
// interface merge in order (a later change wins); within one change a key both set and
// removed is set. What is refused is logged and counted.
func (d *Dispatcher) applyChanges(ctx context.Context, plugin string, b batch, changes []api.InterfaceChange) {
	if len(changes) == 0 {
		return
	}
	live := map[string]bool{}
	for _, ev := range b.Events {
		live[ev.Interface] = ev.Kind != api.EventRemoved
	}
	var (
		out     []ovsdb.InterfaceConfig
		at      = map[string]int{}
		refused []string
		ignored uint64
	)
	refuse := func(iface, key, why string) {
		if len(refused) < limits.MaxLoggedObjects {
			refused = append(refused, fmt.Sprintf("%s:%s (%s)", iface, key, why))
		}
		ignored++
	}
	d.mu.Lock()
	for _, c := range changes {
		if len(c.Set) == 0 && len(c.Remove) == 0 {
			continue // a status only (settleStatuses)
		}
		s := d.cur[c.Interface]
		if !live[c.Interface] || s == nil {
			refuse(c.Interface, "*", "not a live interface of the batch")
			continue
		}
		i, ok := at[c.Interface]
		if !ok {
			i = len(out)
			at[c.Interface] = i
			out = append(out, ovsdb.InterfaceConfig{Interface: c.Interface, Set: map[string]string{}})
		}
		mine := ovsdb.TaggedKeys(s.rawExt, plugin)
		for _, k := range sortedKeys(c.Set) {
			v := c.Set[k]
			cur, present := s.ev.OtherConfig[k]
			switch {
			case ovsdb.ValidInterfaceConfigKey(k) != nil:
				refuse(c.Interface, k, "empty or holds a comma")
			case present && cur != v && !slices.Contains(mine, k):
				refuse(c.Interface, k, "set by someone else")
			default:
				out[i].Set[k] = v
				out[i].Remove = slices.DeleteFunc(out[i].Remove, func(r string) bool { return r == k })
			}
		}
		for _, k := range c.Remove {
			if _, set := c.Set[k]; set {
				continue // set and removed in one change: the Set wins, as in ovsdb's intent
			}
			if !slices.Contains(mine, k) {
				if _, present := s.ev.OtherConfig[k]; present {
					refuse(c.Interface, k, "not set by this plugin")
				}
				continue // someone else's, or absent: nothing to remove
			}
			delete(out[i].Set, k)
			out[i].Remove = append(out[i].Remove, k)
		}
	}
	d.mu.Unlock()
	out = slices.DeleteFunc(out, func(c ovsdb.InterfaceConfig) bool { return len(c.Set) == 0 && len(c.Remove) == 0 })
	if ignored > 0 {
		d.count(plugin, func(s *Stats) { s.Ignored += ignored })
		d.log.Info("ignored part of a watcher plugin's interface changes", "plugin", plugin, "count", ignored, "ignored", strings.Join(refused, ", "))
	}
	if len(out) == 0 {
		return
	}
	actx, cancel := context.WithTimeout(ctx, d.opts.ApplyTimeout)
	defer cancel()
	if err := d.apply.InterfaceConfig(actx, plugin, out); err != nil {
		d.log.Warn("writing a watcher plugin's interface changes failed", "plugin", plugin, "interfaces", len(out), "error", err)
		return
	}
	d.count(plugin, func(s *Stats) { s.Changes += uint64(len(out)) })
}

// refusedAnswer reports whether err is the host's refusal of a watcher's answer
// (api.ValidateChanges: an Internal error about "interface changes"), as opposed to a failure
// to handle the batch.
func refusedAnswer(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == api.Internal && strings.HasPrefix(ae.Message, "interface changes: ")
}

// count updates a plugin's counters.
func (d *Dispatcher) count(plugin string, f func(*Stats)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.plugins[plugin]; p != nil {
		f(&p.q.stats)
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
