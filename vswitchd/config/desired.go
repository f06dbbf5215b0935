package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"
)

// DesiredState is what the daemon makes OVSDB hold: the global other_config keys and the owned
// bridges. Desired returns it in canonical form, so two DesiredStates are equal exactly when
// they ask for the same OVSDB contents.
type DesiredState struct {
	OtherConfig map[string]string
	// Bridges sorted by name; in each, ports sorted by name; in each port, interfaces sorted by
	// name; protocols, controllers and trunks sorted; empty maps and lists are nil.
	Bridges []Bridge
}

// Desired returns a deep copy of the desired state in canonical form (see DesiredState).
// The daemon diffs it against the running one on reload.
func (c *Config) Desired() DesiredState {
	d := DesiredState{OtherConfig: cloneMap(c.OtherConfig)}
	for _, b := range c.Bridges {
		nb := b
		nb.Protocols = sortedCopy(b.Protocols)
		nb.Controllers = sortedCopy(b.Controllers)
		nb.OtherConfig = cloneMap(b.OtherConfig)
		nb.ExternalIDs = cloneMap(b.ExternalIDs)
		nb.Ports = nil
		for _, p := range b.Ports {
			np := p
			np.Tag = cloneInt(p.Tag)
			np.Trunks = sortedCopy(p.Trunks)
			np.OtherConfig = cloneMap(p.OtherConfig)
			np.ExternalIDs = cloneMap(p.ExternalIDs)
			np.Interfaces = nil
			for _, in := range p.Interfaces {
				ni := in
				if ni.Type == "system" {
					ni.Type = ""
				}
				ni.Options = cloneMap(in.Options)
				ni.OtherConfig = cloneMap(in.OtherConfig)
				ni.ExternalIDs = cloneMap(in.ExternalIDs)
				ni.MTURequest = cloneInt(in.MTURequest)
				ni.OFPortRequest = cloneInt(in.OFPortRequest)
				np.Interfaces = append(np.Interfaces, ni)
			}
			slices.SortFunc(np.Interfaces, func(a, b Interface) int { return strings.Compare(a.Name, b.Name) })
			nb.Ports = append(nb.Ports, np)
		}
		slices.SortFunc(nb.Ports, func(a, b Port) int { return strings.Compare(a.Name, b.Name) })
		d.Bridges = append(d.Bridges, nb)
	}
	slices.SortFunc(d.Bridges, func(a, b Bridge) int { return strings.Compare(a.Name, b.Name) })
	return d
}

// Equal reports whether d and o ask for the same OVSDB contents. Both must come from Desired.
func (d DesiredState) Equal(o DesiredState) bool {
	return reflect.DeepEqual(d, o)
}

// Bridge returns the bridge named name, if d has one.
func (d DesiredState) Bridge(name string) (Bridge, bool) {
	i, ok := slices.BinarySearchFunc(d.Bridges, name, func(b Bridge, n string) int { return strings.Compare(b.Name, n) })
	if !ok {
		return Bridge{}, false
	}
	return d.Bridges[i], true
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func sortedCopy[T interface{ ~int | ~string }](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
