package vswitchd

import (
	"context"
	"errors"
	"fmt"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// ---- bridges ----

// ApplyBridge creates or updates a bridge through the API (b.Ports must be empty) and waits
// until ovs-vswitchd applied it. A bridge of the configuration file cannot be changed here.
func (d *Daemon) ApplyBridge(ctx context.Context, b model.Bridge) (model.BridgeInfo, error) {
	if err := desired.ValidateBridge(b); err != nil {
		return model.BridgeInfo{}, fmt.Errorf("%w: %w", model.ErrInvalid, err)
	}
	b = b.Canonical()
	if err := d.store.conflict("bridge", b.Name); err != nil {
		return model.BridgeInfo{}, err
	}
	if err := d.awaitOVSDB(ctx, "bridge", b.Name); err != nil {
		return model.BridgeInfo{}, err
	}
	cerr := d.w.ApplyBridge(ctx, taggedBridge(b), func(cerr error) error {
		var applyErr *ovsdb.ApplyError
		if tags, ok := d.c.Tags("Bridge", b.Name); ok && tags.Get(OriginKey) == string(model.OriginAPI) && !notSent(cerr) &&
			(cerr == nil || errors.As(cerr, &applyErr) || unknownOutcome(cerr)) {
			d.store.putBridge(b)
			return nil // committed: its status tells the rest
		}
		return cerr
	})
	if cerr != nil {
		return model.BridgeInfo{}, classify("bridge", b.Name, cerr)
	}
	d.rec.Refresh()
	info, _ := d.Bridge(b.Name)
	return info, nil
}

// DeleteBridge deletes a bridge created through the API, with its ports.
func (d *Daemon) DeleteBridge(ctx context.Context, name string) error {
	info, managed := d.store.bridge(name)
	switch {
	case managed && info.Origin == model.OriginConfig:
		return fmt.Errorf("%w: bridge %q comes from the configuration file; remove it there and reload", model.ErrConflict, name)
	case !managed:
		return fmt.Errorf("%w: bridge %q is not managed by ovsplane", model.ErrNotFound, name)
	}
	if err := d.awaitOVSDB(ctx, "bridge", name); err != nil {
		return err
	}
	var attached []storedPort
	gone := false
	cerr := d.w.DeleteBridge(ctx, name, func(cerr error) error {
		var applyErr *ovsdb.ApplyError
		if _, still := d.c.Tags("Bridge", name); still || !(cerr == nil || errors.As(cerr, &applyErr) || unknownOutcome(cerr)) {
			return cerr
		}
		gone = true
		attached = d.store.deleteBridge(name)
		return nil
	}, d.store.objectsOn(name)...)
	if gone {
		for _, p := range attached {
			d.att.detach(p.Bridge, p.Port, p.Plugin)
		}
		d.rec.Refresh()
		return nil
	}
	if cerr == nil {
		return fmt.Errorf("%w: bridge %q is still in OVSDB after its deletion committed; the reconciler will retry", model.ErrUnavailable, name)
	}
	return classify("bridge", name, cerr)
}

// Bridge returns one managed bridge (ErrNotFound when it is not).
func (d *Daemon) Bridge(name string) (model.BridgeInfo, error) {
	info, ok := d.store.bridge(name)
	if !ok {
		return model.BridgeInfo{}, fmt.Errorf("%w: bridge %q is not managed by ovsplane", model.ErrNotFound, name)
	}
	info.Status = d.hub.orPending("bridge/"+name, model.KindBridge, name, "")
	return info, nil
}

// Bridges returns every managed bridge, sorted by name.
func (d *Daemon) Bridges() []model.BridgeInfo {
	names := d.store.bridgeNames()
	out := make([]model.BridgeInfo, 0, len(names))
	for _, n := range names {
		if info, err := d.Bridge(n); err == nil {
			out = append(out, info)
		}
	}
	return out
}
