package vswitchd

import (
	"context"
	"errors"
	"fmt"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
	"slices"
)

// ---- bridges ----

// ApplyBridge creates or updates a bridge through the API (b.Ports must be empty) and waits
// until ovs-vswitchd applied it. A bridge of the configuration file cannot be changed here.
func (d *Daemon) ApplyBridge(ctx context.Context, b config.Bridge) (BridgeInfo, error) {
	if err := config.ValidateBridge(b); err != nil {
		return BridgeInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	b = canonicalBridge(b)
	d.mu.Lock()
	err := d.conflictLocked("bridge", b.Name, "")
	d.mu.Unlock()
	if err != nil {
		return BridgeInfo{}, err
	}
	if err := d.awaitOVSDB(ctx, "bridge", b.Name); err != nil {
		return BridgeInfo{}, err
	}
	cerr := d.w.ApplyBridge(ctx, taggedBridge(b), func(cerr error) error {
		var applyErr *ovsdb.ApplyError
		if tags, ok := d.c.Tags("Bridge", b.Name); ok && tags[OriginKey] == string(OriginAPI) && !notSent(cerr) &&
			(cerr == nil || errors.As(cerr, &applyErr) || unknownOutcome(cerr)) {
			d.mu.Lock()
			d.bridges[b.Name] = b
			d.objVer++
			d.mu.Unlock()
			return nil // committed: its status tells the rest
		}
		return cerr
	})
	if cerr != nil {
		return BridgeInfo{}, classify("bridge", b.Name, cerr)
	}
	d.rec.Refresh()
	info, _ := d.Bridge(b.Name)
	return info, nil
}

// DeleteBridge deletes a bridge created through the API, with its ports.
func (d *Daemon) DeleteBridge(ctx context.Context, name string) error {
	d.mu.Lock()
	_, isAPI := d.bridges[name]
	_, isCfg := d.cfgDesired().Bridge(name)
	d.mu.Unlock()
	switch {
	case isCfg:
		return fmt.Errorf("%w: bridge %q comes from the configuration file; remove it there and reload", ErrConflict, name)
	case !isAPI:
		return fmt.Errorf("%w: bridge %q is not managed by ovsplane", ErrNotFound, name)
	}
	if err := d.awaitOVSDB(ctx, "bridge", name); err != nil {
		return err
	}
	var attached []apiPort
	gone := false
	cerr := d.w.DeleteBridge(ctx, name, func(cerr error) error {
		var applyErr *ovsdb.ApplyError
		if _, still := d.c.Tags("Bridge", name); still || !(cerr == nil || errors.As(cerr, &applyErr) || unknownOutcome(cerr)) {
			return cerr
		}
		gone = true
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.bridges, name)
		d.objVer++
		for pn, p := range d.ports {
			if p.bridge == name {
				delete(d.ports, pn)
				d.objVer++
				if p.plugin != nil {
					attached = append(attached, p)
				}
			}
		}
		return nil
	})
	if gone {
		for _, p := range attached {
			d.detach(p.bridge, p.spec, p.plugin)
		}
		d.rec.Refresh()
		return nil
	}
	if cerr == nil {
		return fmt.Errorf("%w: bridge %q is still in OVSDB after its deletion committed; the reconciler will retry", ErrUnavailable, name)
	}
	return classify("bridge", name, cerr)
}

// Bridge returns one managed bridge (ErrNotFound when it is not).
func (d *Daemon) Bridge(name string) (BridgeInfo, error) {
	d.mu.Lock()
	b, isAPI := d.bridges[name]
	cb, isCfg := d.cfgDesired().Bridge(name)
	d.mu.Unlock()
	info := BridgeInfo{}
	switch {
	case isCfg:
		cb.Ports = nil
		info.Spec, info.Origin = cb, OriginConfig
	case isAPI:
		info.Spec, info.Origin = b, OriginAPI
	default:
		return BridgeInfo{}, fmt.Errorf("%w: bridge %q is not managed by ovsplane", ErrNotFound, name)
	}
	info.Status = d.hub.orPending("bridge/"+name, reconcile.KindBridge, name, "")
	return info, nil
}

// Bridges returns every managed bridge, sorted by name.
func (d *Daemon) Bridges() []BridgeInfo {
	d.mu.Lock()
	names := make([]string, 0, len(d.bridges))
	for n := range d.bridges {
		names = append(names, n)
	}
	for _, b := range d.cfgDesired().Bridges {
		names = append(names, b.Name)
	}
	d.mu.Unlock()
	slices.Sort(names)
	out := make([]BridgeInfo, 0, len(names))
	for _, n := range slices.Compact(names) {
		if info, err := d.Bridge(n); err == nil {
			out = append(out, info)
		}
	}
	return out
}

// ---- helpers ----

func canonicalBridge(b config.Bridge) config.Bridge {
	c := config.Config{Bridges: []config.Bridge{b}}
	return c.Desired().Bridges[0]
}
