// Package apitest provides Fake, an in-memory apiserver.Backend for tests of the API server
// and of its clients (vsctl's daemon commands). It keeps the contract of the daemon core's
// Backend: sentinel errors naming the object, Origin config objects refused, ports on an
// existing bridge only, an interface "refused by ovs-vswitchd" reported in its status rather
// than as an error, sorted listings, change notifications with removed objects in an empty
// State, slow subscribers dropped, and interface types limited to model.InterfaceTypes plus
// the types of the plugins set with SetPlugins.
package apitest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/model"
)

// RefuseOption is the interface option that makes the Fake's simulated ovs-vswitchd refuse an
// interface: its value becomes the interface's error message.
const RefuseOption = "fake-refuse"

// SubscriberBuffer is how many change batches a subscriber may lag before it is dropped.
const SubscriberBuffer = 16

// Fake is an in-memory Backend. The zero value is not usable; create it with New. It is safe
// for concurrent use.
type Fake struct {
	mu       sync.Mutex
	bridges  map[string]model.BridgeInfo
	ports    map[string]model.PortInfo
	pending  map[string]bool // keys forced to pending by SetPending
	err      error           // returned by every call while set
	reloadFn func() error
	nextOF   int
	subs     map[chan []model.Status]struct{}
	changed  chan struct{} // closed and replaced on every change (WaitReady)
	delay    time.Duration // of every ApplyPort
	// applying counts ApplyPort calls in flight; maxApplying is its peak.
	applying, maxApplying int
	plugins               []model.PluginInfo
	jobs                  map[string][]model.JobInfo // by plugin
	watched               []model.WatchedStatus
}

// New returns an empty Fake.
func New() *Fake {
	return &Fake{
		bridges: map[string]model.BridgeInfo{},
		ports:   map[string]model.PortInfo{},
		pending: map[string]bool{},
		subs:    map[chan []model.Status]struct{}{},
		changed: make(chan struct{}),
		nextOF:  1,
	}
}

// SetError makes every later call that can fail return err (nil restores normal behaviour).
func (f *Fake) SetError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// SetReload sets what Reload does (default: nothing, success).
func (f *Fake) SetReload(fn func() error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloadFn = fn
}

// AddConfigBridge adds a bridge of origin config (refused by the API's Apply and Delete).
func (f *Fake) AddConfigBridge(b model.Bridge) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bridges[b.Name] = model.BridgeInfo{Spec: b, Origin: model.OriginConfig, Status: f.status(model.KindBridge, b.Name, "")}
	f.notify(f.bridges[b.Name].Status)
}

// SetPending holds the object key ("port/p1") in the pending state (true) or releases it
// (false), notifying subscribers either way.
func (f *Fake) SetPending(key string, pending bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending[key] = pending
	for _, st := range f.statusLocked() {
		if st.Key() == key {
			f.notify(st)
		}
	}
}

// SetPlugins sets what Plugins returns (sorted by name there). The types of the plugins in
// the "running" state become valid interface types for ApplyPort; a type of a plugin in any
// other state is refused with an error naming the plugin and its state, as the daemon does.
func (f *Fake) SetPlugins(ps []model.PluginInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.plugins = slices.Clone(ps)
	slices.SortFunc(f.plugins, func(a, b model.PluginInfo) int { return cmp.Compare(a.Name, b.Name) })
}

// Plugins implements apiserver.Backend.
func (f *Fake) Plugins() []model.PluginInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]model.PluginInfo, 0, len(f.plugins))
	for _, p := range f.plugins {
		p.Types, p.Capabilities = slices.Clone(p.Types), slices.Clone(p.Capabilities)
		out = append(out, p)
	}
	return out
}

// SetWatched sets what WatchedStatuses returns (in that order, as the daemon sorts them).
func (f *Fake) SetWatched(ws []model.WatchedStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watched = slices.Clone(ws)
}

// WatchedStatuses implements apiserver.Backend.
func (f *Fake) WatchedStatuses() []model.WatchedStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.watched)
}

// SetJobs sets what PluginStats returns for plugin (which SetPlugins must list).
func (f *Fake) SetJobs(plugin string, jobs []model.JobInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jobs == nil {
		f.jobs = map[string][]model.JobInfo{}
	}
	f.jobs[plugin] = slices.Clone(jobs)
}

// PluginStats implements apiserver.Backend.
func (f *Fake) PluginStats(plugin string) ([]model.JobInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.ContainsFunc(f.plugins, func(p model.PluginInfo) bool { return p.Name == plugin }) {
		return nil, fmt.Errorf("%w: no plugin named %q in ovsplaned's configuration", model.ErrNotFound, plugin)
	}
	return slices.Clone(f.jobs[plugin]), nil
}

// checkType refuses an interface type that is neither an OVS type the config accepts nor a
// type of a running plugin.
func (f *Fake) checkType(port string, in model.Interface) error {
	if slices.Contains(model.InterfaceTypes, in.Type) {
		return nil
	}
	for _, p := range f.plugins {
		if !slices.Contains(p.Types, in.Type) {
			continue
		}
		if p.State != "running" {
			return fmt.Errorf("port %q: interface %q: plugin %q, which provides type %q, is %s (%s): %w",
				port, in.Name, p.Name, in.Type, p.State, p.Reason, model.ErrUnavailable)
		}
		return nil
	}
	return fmt.Errorf("port %q: interface %q: unknown interface type %q (no plugin provides it): %w",
		port, in.Name, in.Type, model.ErrInvalid)
}

// SetApplyDelay makes every ApplyPort take d (before it takes effect), so that concurrent
// callers overlap as they do while the daemon's batcher waits for ovs-vswitchd.
func (f *Fake) SetApplyDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// MaxConcurrentApplyPort returns the most ApplyPort calls that were in flight at once.
func (f *Fake) MaxConcurrentApplyPort() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxApplying
}

func (f *Fake) status(kind model.Kind, name, bridge string) model.Status {
	st := model.Status{Kind: kind, Name: name, Bridge: bridge, State: model.StateReady}
	if f.pending[st.Key()] {
		st.State = model.StatePending
	}
	return st
}

// notify sends one change batch to every subscriber, dropping those whose buffer is full.
func (f *Fake) notify(changes ...model.Status) {
	close(f.changed)
	f.changed = make(chan struct{})
	for ch := range f.subs {
		select {
		case ch <- changes:
		default:
			delete(f.subs, ch)
			close(ch)
		}
	}
}

// ApplyBridge implements apiserver.Backend.
func (f *Fake) ApplyBridge(ctx context.Context, b model.Bridge) (model.BridgeInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx); err != nil {
		return model.BridgeInfo{}, err
	}
	switch {
	case b.Name == "" || len(b.Name) > 15:
		return model.BridgeInfo{}, fmt.Errorf("bridge %q: name must be 1 to 15 characters: %w", b.Name, model.ErrInvalid)
	case len(b.Ports) > 0:
		return model.BridgeInfo{}, fmt.Errorf("bridge %q: ports are applied with ApplyPort, not within the bridge: %w", b.Name, model.ErrInvalid)
	}
	if old, ok := f.bridges[b.Name]; ok && old.Origin == model.OriginConfig {
		return model.BridgeInfo{}, fmt.Errorf("bridge %q comes from the config file; edit the file and reload: %w", b.Name, model.ErrConflict)
	}
	info := model.BridgeInfo{Spec: b, Origin: model.OriginAPI, Status: f.status(model.KindBridge, b.Name, "")}
	f.bridges[b.Name] = info
	f.notify(info.Status)
	return info, nil
}

// DeleteBridge implements apiserver.Backend.
func (f *Fake) DeleteBridge(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx); err != nil {
		return err
	}
	b, ok := f.bridges[name]
	switch {
	case !ok:
		return fmt.Errorf("bridge %q: %w", name, model.ErrNotFound)
	case b.Origin == model.OriginConfig:
		return fmt.Errorf("bridge %q comes from the config file; remove it there and reload: %w", name, model.ErrConflict)
	}
	removed := []model.Status{{Kind: model.KindBridge, Name: name}}
	for pn, p := range f.ports {
		if p.Bridge == name {
			delete(f.ports, pn)
			removed = append(removed, removedPort(p)...)
		}
	}
	delete(f.bridges, name)
	f.notify(removed...)
	return nil
}

func removedPort(p model.PortInfo) []model.Status {
	out := []model.Status{{Kind: model.KindPort, Name: p.Spec.Name, Bridge: p.Bridge}}
	for _, in := range p.Spec.Interfaces {
		out = append(out, model.Status{Kind: model.KindInterface, Name: in.Name, Bridge: p.Bridge})
	}
	return out
}

// Bridge implements apiserver.Backend.
func (f *Fake) Bridge(name string) (model.BridgeInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return model.BridgeInfo{}, f.err
	}
	b, ok := f.bridges[name]
	if !ok {
		return model.BridgeInfo{}, fmt.Errorf("bridge %q is not managed by ovsplane: %w", name, model.ErrNotFound)
	}
	return b, nil
}

// Bridges implements apiserver.Backend.
func (f *Fake) Bridges() []model.BridgeInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]model.BridgeInfo, 0, len(f.bridges))
	for _, b := range f.bridges {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b model.BridgeInfo) int { return cmp.Compare(a.Spec.Name, b.Spec.Name) })
	return out
}

// ApplyPort implements apiserver.Backend. An interface with the option RefuseOption is set up
// in the error state with that option's value as its message, as ovs-vswitchd reports a
// refused interface.
func (f *Fake) ApplyPort(ctx context.Context, bridge string, p model.Port) (model.PortInfo, error) {
	f.mu.Lock()
	f.applying++
	f.maxApplying = max(f.maxApplying, f.applying)
	delay := f.delay
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.applying--
		f.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return model.PortInfo{}, fmt.Errorf("port %q: %w", p.Name, ctx.Err())
	case <-time.After(delay):
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx); err != nil {
		return model.PortInfo{}, err
	}
	if err := f.validatePort(bridge, p); err != nil {
		return model.PortInfo{}, err
	}
	info := model.PortInfo{Bridge: bridge, Spec: p, Origin: model.OriginAPI, Status: f.status(model.KindPort, p.Name, bridge)}
	changes := []model.Status{info.Status}
	for _, in := range p.Interfaces {
		st := f.status(model.KindInterface, in.Name, bridge)
		if msg := in.Options[RefuseOption]; msg != "" {
			st.State, st.Error = model.StateError, msg
			info.Status.State, info.Status.Error = model.StateError, fmt.Sprintf("interface %s: %s", in.Name, msg)
			changes[0] = info.Status
		} else {
			st.Ofport = f.nextOF
			f.nextOF++
		}
		info.Interfaces = append(info.Interfaces, st)
		changes = append(changes, st)
	}
	f.ports[p.Name] = info
	f.notify(changes...)
	return info, nil
}

func (f *Fake) validatePort(bridge string, p model.Port) error {
	if p.Name == "" {
		return fmt.Errorf("port: name required: %w", model.ErrInvalid)
	}
	if len(p.Interfaces) == 0 {
		return fmt.Errorf("port %q: at least one interface required (for a plain port, one with the port's name): %w", p.Name, model.ErrInvalid)
	}
	if _, ok := f.bridges[bridge]; !ok {
		return fmt.Errorf("port %q: bridge %q is not managed by ovsplane (apply it first): %w", p.Name, bridge, model.ErrNotFound)
	}
	if old, ok := f.ports[p.Name]; ok && old.Bridge != bridge {
		return fmt.Errorf("port %q is on bridge %q; delete it there first: %w", p.Name, old.Bridge, model.ErrConflict)
	}
	for _, in := range p.Interfaces {
		if err := f.checkType(p.Name, in); err != nil {
			return err
		}
	}
	return nil
}

// DeletePort implements apiserver.Backend.
func (f *Fake) DeletePort(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx); err != nil {
		return err
	}
	p, ok := f.ports[name]
	if !ok {
		return fmt.Errorf("port %q is not managed by ovsplane: %w", name, model.ErrNotFound)
	}
	delete(f.ports, name)
	f.notify(removedPort(p)...)
	return nil
}

// Port implements apiserver.Backend.
func (f *Fake) Port(name string) (model.PortInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return model.PortInfo{}, f.err
	}
	p, ok := f.ports[name]
	if !ok {
		return model.PortInfo{}, fmt.Errorf("port %q is not managed by ovsplane: %w", name, model.ErrNotFound)
	}
	return f.refreshPort(p), nil
}

// refreshPort applies SetPending to a stored port's statuses.
func (f *Fake) refreshPort(p model.PortInfo) model.PortInfo {
	p.Status.State = f.pendingState(p.Status)
	p.Interfaces = slices.Clone(p.Interfaces)
	for i, st := range p.Interfaces {
		p.Interfaces[i].State = f.pendingState(st)
		if p.Interfaces[i].State != model.StateReady {
			p.Interfaces[i].Ofport = 0
		}
	}
	return p
}

// pendingState is st's state with SetPending applied: pending while held, ready after unless
// in error.
func (f *Fake) pendingState(st model.Status) model.State {
	switch {
	case st.State == model.StateError:
		return model.StateError
	case f.pending[st.Key()]:
		return model.StatePending
	}
	return model.StateReady
}

// Ports implements apiserver.Backend.
func (f *Fake) Ports(bridge string) []model.PortInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []model.PortInfo{}
	for _, p := range f.ports {
		if bridge == "" || p.Bridge == bridge {
			out = append(out, f.refreshPort(p))
		}
	}
	slices.SortFunc(out, func(a, b model.PortInfo) int { return cmp.Compare(a.Spec.Name, b.Spec.Name) })
	return out
}

// Status implements apiserver.Backend.
func (f *Fake) Status() []model.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusLocked()
}

// statusLocked lists every object: bridges by name, each followed by its ports by name, each
// followed by its interfaces.
func (f *Fake) statusLocked() []model.Status {
	var out []model.Status
	names := make([]string, 0, len(f.bridges))
	for n := range f.bridges {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, bn := range names {
		st := f.bridges[bn].Status
		st.State = f.pendingState(st)
		out = append(out, st)
		var ports []model.PortInfo
		for _, p := range f.ports {
			if p.Bridge == bn {
				ports = append(ports, p)
			}
		}
		slices.SortFunc(ports, func(a, b model.PortInfo) int { return cmp.Compare(a.Spec.Name, b.Spec.Name) })
		for _, p := range ports {
			p = f.refreshPort(p)
			out = append(out, p.Status)
			out = append(out, p.Interfaces...)
		}
	}
	return out
}

// Subscribe implements apiserver.Backend.
func (f *Fake) Subscribe(ctx context.Context) ([]model.Status, <-chan []model.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan []model.Status, SubscriberBuffer)
	f.subs[ch] = struct{}{}
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.subs[ch]; ok {
			delete(f.subs, ch)
			close(ch)
		}
	})
	return f.statusLocked(), ch
}

// WaitReady implements apiserver.Backend. An object in the error state ends the wait with an
// error naming it (wrapping no sentinel, as a refused interface is not a call error).
func (f *Fake) WaitReady(ctx context.Context, keys []string) ([]model.Status, error) {
	for {
		f.mu.Lock()
		if err := f.err; err != nil {
			f.mu.Unlock()
			return nil, err
		}
		all := f.statusLocked()
		changed := f.changed
		f.mu.Unlock()
		var got []model.Status
		ready := true
		for _, k := range keys {
			i := slices.IndexFunc(all, func(s model.Status) bool { return s.Key() == k })
			if i < 0 {
				return nil, fmt.Errorf("%s is not managed by ovsplane: %w", k, model.ErrNotFound)
			}
			st := all[i]
			if st.State == model.StateError {
				return append(got, st), fmt.Errorf("%s failed: %s", k, st.Error)
			}
			ready = ready && st.State == model.StateReady
			got = append(got, st)
		}
		if ready {
			return got, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %v: %w", keys, ctx.Err())
		case <-changed:
		}
	}
}

// Reload implements apiserver.Backend.
func (f *Fake) Reload(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(ctx); err != nil {
		return err
	}
	if f.reloadFn != nil {
		return f.reloadFn()
	}
	return nil
}

// Health implements apiserver.Backend.
func (f *Fake) Health(context.Context) model.Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := model.Health{Version: model.Version, Mode: model.ModeEmbedded, OVSDBEndpoint: "unix:/fake/db.sock",
		OVSDBConnected: true, Objects: map[model.State]int{}}
	for _, st := range f.statusLocked() {
		h.Objects[st.State]++
	}
	return h
}

func (f *Fake) check(ctx context.Context) error {
	if f.err != nil {
		return f.err
	}
	return ctx.Err()
}
