package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/model"
)

// DesiredState is what the daemon makes OVSDB hold: the global other_config keys and the owned
// bridges. Desired returns it in canonical form, so two DesiredStates are equal exactly when
// they ask for the same OVSDB contents.
type DesiredState struct {
	OtherConfig map[string]string
	// Bridges sorted by name; in each, ports sorted by name; in each port, interfaces sorted by
	// name; protocols, controllers and trunks sorted; empty maps and lists are nil.
	Bridges []model.Bridge
}

// Desired returns a deep copy of the desired state in canonical form (see DesiredState).
// The daemon diffs it against the running one on reload.
func (c *Config) Desired() DesiredState {
	d := DesiredState{OtherConfig: cloneMap(c.OtherConfig)}
	for _, b := range c.Bridges {
		d.Bridges = append(d.Bridges, b.Canonical())
	}
	slices.SortFunc(d.Bridges, func(a, b model.Bridge) int { return strings.Compare(a.Name, b.Name) })
	return d
}

// Equal reports whether d and o ask for the same OVSDB contents. Both must come from Desired.
func (d DesiredState) Equal(o DesiredState) bool {
	return reflect.DeepEqual(d, o)
}

// Bridge returns the bridge named name, if d has one.
func (d DesiredState) Bridge(name string) (model.Bridge, bool) {
	i, ok := slices.BinarySearchFunc(d.Bridges, name, func(b model.Bridge, n string) int { return strings.Compare(b.Name, n) })
	if !ok {
		return model.Bridge{}, false
	}
	return d.Bridges[i], true
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
