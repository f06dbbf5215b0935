package vethplugin

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// watchState is what the watcher has learnt from port events.
type watchState struct {
	// foreign maps interfaces others created on bridges with the plugin's ports to their bridge.
	foreign map[string]string
	// clashes maps interfaces on a bridge that are the peer end of one of the plugin's pairs
	// (in the host namespace) to their bridge: both ends of a veth on bridges is a loop.
	clashes map[string]string
	// events counts the events received.
	events uint64
}

func newWatchState() watchState {
	return watchState{foreign: map[string]string{}, clashes: map[string]string{}}
}

// clashList formats clashes as "iface@bridge, …", sorted.
func (w *watchState) clashList() string {
	var s []string
	for _, i := range slices.Sorted(maps.Keys(w.clashes)) {
		s = append(s, i+"@"+w.clashes[i])
	}
	return strings.Join(s, ", ")
}

// OnPortEvents watches every interface (Info.Watch is empty) and keeps, from the kernel's view
// of the plugin's pairs, two things: the foreign interfaces on bridges that hold one of its
// ports (logged when first seen, counted in Health), and interfaces that are in fact the peer
// end of one of its pairs (logged as a warning, Health degraded until they go). It asks for no
// changes.
func (p *Plugin) OnPortEvents(ctx context.Context, batch api.PortEventBatch) ([]api.InterfaceChange, error) {
	if _, err := p.config(); err != nil {
		return nil, err
	}
	states, err := p.kernel().List()
	if err != nil {
		return nil, apiError("port events", err) // the host delivers the batch again
	}
	mine, peers, bridges := map[string]bool{}, map[string]string{}, map[string]bool{}
	for _, st := range states {
		mine[st.Spec.Port] = true
		if st.Spec.Netns == "" {
			peers[st.Spec.Peer] = st.Spec.Port
		}
		if st.Spec.Bridge != "" {
			bridges[st.Spec.Bridge] = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &p.watch
	if batch.Resync {
		*w = watchState{foreign: map[string]string{}, clashes: map[string]string{}, events: w.events}
	}
	for _, ev := range batch.Events {
		w.events++
		delete(w.foreign, ev.Interface)
		delete(w.clashes, ev.Interface)
		if ev.Kind == api.EventRemoved || mine[ev.Interface] || ev.Owner == api.OwnerPlugin && ev.Plugin == Name {
			continue
		}
		if port, ok := peers[ev.Interface]; ok {
			w.clashes[ev.Interface] = ev.Bridge
			p.log.Warn("an interface on a bridge is the peer end of a veth port: traffic loops", "interface", ev.Interface,
				"bridge", ev.Bridge, "veth_port", port, "owner", ownerName(ev))
			continue
		}
		if bridges[ev.Bridge] {
			w.foreign[ev.Interface] = ev.Bridge
			if ev.Kind == api.EventAdded {
				p.log.Info("foreign interface on a bridge with veth ports", "interface", ev.Interface, "type", ev.Type,
					"bridge", ev.Bridge, "owner", ownerName(ev))
			}
		}
	}
	return nil, ctx.Err()
}

// ownerName names an event's owner for logs.
func ownerName(ev api.PortEvent) string {
	switch ev.Owner {
	case api.OwnerOvsplane:
		return "ovsplane"
	case api.OwnerPlugin:
		return "plugin " + ev.Plugin
	case api.OwnerForeign:
		return "foreign"
	}
	return "unknown"
}
