package ovsdb

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// InterfaceKeysPrefix starts the Interface external_ids key that records, for one tagger (a
// watcher plugin), the other_config keys it set on that interface: InterfaceKeysPrefix+tagger
// holds them comma-separated, e.g. "ovsplane-other-config-dsa" = "dma-channels,dma-mode". The
// same convention as Open_vSwitch's record of the owner's global keys.
const InterfaceKeysPrefix = globalKeysPrefix

// InterfaceConfig is one interface's other_config change asked for by a tagger (see
// Txn.SetInterfaceConfig).
type InterfaceConfig struct {
	Interface string
	Set       map[string]string
	Remove    []string
}

// TaggedKeys returns the other_config keys external_ids (an interface's, or Open_vSwitch's
// for the global keys) records as set by tagger, in the recorded order.
func TaggedKeys(externalIDs map[string]string, tagger string) []string {
	v := externalIDs[InterfaceKeysPrefix+tagger]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// ValidInterfaceConfigKey rejects an other_config key SetInterfaceConfig cannot record: empty,
// or holding a comma (the record's separator) or a NUL.
func ValidInterfaceConfigKey(k string) error { return validRecordedKey("Interface", k) }

// validRecordedKey rejects an other_config key of table that a comma-separated record of set
// keys cannot hold: empty, or holding a comma or a NUL.
func validRecordedKey(table, k string) error {
	if k == "" || strings.ContainsAny(k, ",\x00") {
		return fmt.Errorf("%w: %s other_config key %q: keys must be non-empty and contain no comma or NUL", ErrInvalid, table, k)
	}
	return nil
}

// SetInterfaceConfig changes other_config keys of interfaces on behalf of tagger (a watcher
// plugin's name), whoever created the interfaces, by map mutations only: no other column and
// no other key is written. A key tagger sets is recorded in the interface's external_ids under
// InterfaceKeysPrefix+tagger; a key present that tagger did not set is left as it is (the
// daemon never takes over someone else's key); Remove removes only keys recorded for tagger
// and ignores the rest. An interface that is gone is skipped. Each interface at most once per
// call, and not changed by another intent of the same Txn (ErrInvalid otherwise). Keys must
// pass ValidInterfaceConfigKey, tagger must be a plugin name ([a-z][a-z0-9-]*).
func (t *Txn) SetInterfaceConfig(tagger string, changes ...InterfaceConfig) *Txn {
	changes = slices.Clone(changes)
	return t.push(func() error { return validateInterfaceConfig(tagger, changes) }, func(p *planner) error {
		for _, c := range changes {
			if err := p.setInterfaceConfig(tagger, c); err != nil {
				return err
			}
		}
		return nil
	})
}

func validateInterfaceConfig(tagger string, changes []InterfaceConfig) error {
	if tagger == "" || strings.Trim(tagger, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || tagger[0] < 'a' || tagger[0] > 'z' {
		return fmt.Errorf("%w: interface other_config tagger %q must match [a-z][a-z0-9-]*", ErrInvalid, tagger)
	}
	seen := map[string]bool{}
	for _, c := range changes {
		if c.Interface == "" || strings.Contains(c.Interface, "\x00") {
			return fmt.Errorf("%w: interface name %q is empty or holds a NUL", ErrInvalid, c.Interface)
		}
		if seen[c.Interface] {
			return fmt.Errorf("%w: interface %q: its other_config changes must come as one change", ErrInvalid, c.Interface)
		}
		seen[c.Interface] = true
		for k := range c.Set {
			if err := ValidInterfaceConfigKey(k); err != nil {
				return fmt.Errorf("interface %q: %w", c.Interface, err)
			}
		}
		for _, k := range c.Remove {
			if err := ValidInterfaceConfigKey(k); err != nil {
				return fmt.Errorf("interface %q: %w", c.Interface, err)
			}
		}
	}
	return nil
}

// setInterfaceConfig plans one interface's change: a mutate of other_config and of the
// tagger's record in external_ids, guarded by a wait on both maps as read.
func (p *planner) setInterfaceConfig(tagger string, c InterfaceConfig) error {
	cur := &vswitch.Interface{Name: c.Interface}
	found, err := p.lookup(vswitch.InterfaceTable, cur)
	if err != nil || !found {
		return err // gone: nothing to change
	}
	ref := objRef{vswitch.InterfaceTable, c.Interface}
	if p.guarded[ref.table+"/"+cur.UUID] {
		return &OpError{Kind: ErrInvalid, Table: ref.table, Row: c.Interface,
			Details: "changed by two intents of one transaction; give its other_config changes in one"}
	}
	mine := TaggedKeys(cur.ExternalIDs, tagger)
	owned := slices.Clone(mine)
	have, want := map[string]string{}, map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(c.Set)) {
		v, present := cur.OtherConfig[k]
		isMine := slices.Contains(mine, k)
		switch {
		case present && !isMine:
			continue // someone else's key
		case present && v == c.Set[k]:
			continue
		case present:
			have[k] = v
		}
		want[k] = c.Set[k]
		if !isMine {
			owned = append(owned, k)
		}
	}
	for _, k := range c.Remove {
		if _, set := c.Set[k]; set || !slices.Contains(mine, k) {
			continue // set in the same change, or not tagger's: ignored
		}
		if v, present := cur.OtherConfig[k]; present {
			have[k] = v
		}
		owned = slices.DeleteFunc(owned, func(o string) bool { return o == k })
	}
	muts := mapMutations("other_config", have, want)
	tagKey := InterfaceKeysPrefix + tagger
	oldTag, newTag := strings.Join(mine, ","), strings.Join(owned, ",")
	if oldTag != newTag {
		tagHave, tagWant := map[string]string{}, map[string]string{}
		if oldTag != "" {
			tagHave[tagKey] = oldTag
		}
		if newTag != "" {
			tagWant[tagKey] = newTag
		}
		muts = append(muts, mapMutations("external_ids", tagHave, tagWant)...)
	}
	if len(muts) == 0 {
		return nil
	}
	// Both maps were read to decide: another writer changing either makes the server refuse,
	// and Commit plans again from the refreshed cache.
	p.guard(ref, cur.UUID, false, libovsdb.Row{"name": cur.Name, "other_config": mustMap(cur.OtherConfig),
		"external_ids": mustMap(cur.ExternalIDs)})
	p.add(ref, mutateOp(ref.table, whereUUID(cur.UUID), muts))
	return nil
}

// keepTagged returns the other_config an owned interface is made equal to: spec's, plus the
// keys a tagger recorded on the interface (SetInterfaceConfig) that spec does not set, at their
// current values, so the daemon's own writes never undo a watcher's.
func keepTagged(cur *vswitch.Interface, spec map[string]string) map[string]string {
	var out map[string]string
	for k, v := range cur.ExternalIDs {
		tagger, ok := strings.CutPrefix(k, InterfaceKeysPrefix)
		if !ok || tagger == "" || v == "" {
			continue
		}
		for _, key := range strings.Split(v, ",") {
			val, present := cur.OtherConfig[key]
			if _, inSpec := spec[key]; !present || inSpec {
				continue
			}
			if out == nil {
				out = maps.Clone(spec)
				if out == nil {
					out = map[string]string{}
				}
			}
			out[key] = val
		}
	}
	if out == nil {
		return spec
	}
	return out
}
