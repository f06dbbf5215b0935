package ovsdb

import (
	"fmt"
	"slices"
	"strings"
)

// Keys written into external_ids of every row this package creates.
const (
	// OwnerKey holds the owner name (Config.Owner). A row without it, or with another owner's
	// name, is never modified or deleted by this package.
	OwnerKey = "ovsplane-owner"
	// GenerationKey holds the generation (Txn's generation number) that last wrote the row, so a
	// restarted daemon can tell stale rows from current ones.
	GenerationKey = "ovsplane-generation"
	// globalKeysPrefix+owner, a key of Open_vSwitch.external_ids, lists the other_config keys
	// that owner set (comma-separated).
	globalKeysPrefix = "ovsplane-other-config-"
)

// BridgeSpec is the desired state of one bridge. Zero fields mean the OVS default.
//
// Map columns are made equal to the spec (other_config, options), except external_ids: there the
// spec's keys are set and keys added by others (ovn-controller, os-vif) are left alone, so a key
// dropped from the spec stays until removed by hand. The same holds for PortSpec and
// InterfaceSpec.
type BridgeSpec struct {
	Name         string   // required, unique
	DatapathType string   // "" (system) or "netdev" (userspace, needed for DPDK)
	FailMode     string   // "", "standalone" or "secure"
	Protocols    []string // e.g. OpenFlow10, OpenFlow13
	// Controllers are the OpenFlow controller targets (see ValidControllerTarget) the bridge
	// has Controller rows for, owned like every row ovsplane creates; controllers others added
	// to the bridge are kept. Empty removes the owned ones.
	Controllers []string
	OtherConfig map[string]string // Bridge.other_config
	ExternalIDs map[string]string // keys to set; ownership keys are added; others' keys are kept
	// Local configures the bridge's own internal interface (named like the bridge), for example
	// its mtu_request on a DPDK br-phy. Name and Type are ignored: they are always the bridge's
	// name and "internal". nil means OVS defaults.
	Local *InterfaceSpec
}

// InterfaceSpec is the desired state of one interface of a port.
type InterfaceSpec struct {
	Name          string            // required, unique across the switch
	Type          string            // "", internal, dpdk, dpdkvhostuserclient, patch, vxlan, …
	Options       map[string]string // Interface.options, e.g. dpdk-devargs, remote_ip, peer
	OtherConfig   map[string]string
	ExternalIDs   map[string]string
	MTURequest    *int // Interface.mtu_request
	OfportRequest *int // Interface.ofport_request (1-65279)
}

// PortSpec is the desired state of one port and its interfaces. A port with one interface is a
// plain port (its interface usually has the port's name); with two or more it is a bond.
type PortSpec struct {
	Bridge      string          // bridge the port belongs to; required
	Name        string          // required, unique across the switch
	Interfaces  []InterfaceSpec // at least one; nil means one interface named like the port
	Tag         *int            // access VLAN
	Trunks      []int
	VLANMode    string // "", access, trunk, native-tagged, native-untagged
	BondMode    string // bonds: active-backup, balance-slb, balance-tcp
	LACP        string // bonds: "", active, passive, off
	OtherConfig map[string]string
	ExternalIDs map[string]string
}

func (s *BridgeSpec) validate() error {
	if err := validName("bridge", s.Name); err != nil {
		return err
	}
	switch s.FailMode {
	case "", "standalone", "secure":
	default:
		return fmt.Errorf("%w: bridge %q: fail_mode %q must be standalone or secure", ErrInvalid, s.Name, s.FailMode)
	}
	for i, t := range s.Controllers {
		if err := ValidControllerTarget(t); err != nil {
			return fmt.Errorf("bridge %q: %w", s.Name, err)
		}
		if slices.Contains(s.Controllers[:i], t) {
			return fmt.Errorf("%w: bridge %q lists controller %q twice", ErrInvalid, s.Name, t)
		}
	}
	if s.Local != nil {
		l := localPort(s.Name, s.Local)
		if err := l.validate(); err != nil {
			return fmt.Errorf("bridge %q local interface: %w", s.Name, err)
		}
	}
	return checkReservedKeys("bridge "+s.Name, s.ExternalIDs)
}

// interfaces returns the port's interface specs, defaulting to one named like the port.
func (s *PortSpec) interfaces() []InterfaceSpec {
	if len(s.Interfaces) == 0 {
		return []InterfaceSpec{{Name: s.Name}}
	}
	return s.Interfaces
}

func (s *PortSpec) validate() error {
	if err := validName("port", s.Name); err != nil {
		return err
	}
	if s.Bridge == "" {
		return fmt.Errorf("%w: port %q: no bridge given", ErrInvalid, s.Name)
	}
	if s.Tag != nil && (*s.Tag < 0 || *s.Tag > 4095) {
		return fmt.Errorf("%w: port %q: tag %d out of range 0-4095", ErrInvalid, s.Name, *s.Tag)
	}
	for _, v := range s.Trunks {
		if v < 0 || v > 4095 {
			return fmt.Errorf("%w: port %q: trunk %d out of range 0-4095", ErrInvalid, s.Name, v)
		}
	}
	seen := map[string]bool{}
	for _, ifc := range s.interfaces() {
		if err := validName("interface", ifc.Name); err != nil {
			return fmt.Errorf("port %q: %w", s.Name, err)
		}
		if seen[ifc.Name] {
			return fmt.Errorf("%w: port %q lists interface %q twice", ErrInvalid, s.Name, ifc.Name)
		}
		seen[ifc.Name] = true
		if ifc.OfportRequest != nil && (*ifc.OfportRequest < 1 || *ifc.OfportRequest > 65279) {
			return fmt.Errorf("%w: interface %q: ofport_request %d out of range 1-65279", ErrInvalid, ifc.Name, *ifc.OfportRequest)
		}
		if ifc.MTURequest != nil && *ifc.MTURequest < 1 {
			return fmt.Errorf("%w: interface %q: mtu_request %d must be positive", ErrInvalid, ifc.Name, *ifc.MTURequest)
		}
		if err := checkReservedKeys("interface "+ifc.Name, ifc.ExternalIDs); err != nil {
			return err
		}
	}
	return checkReservedKeys("port "+s.Name, s.ExternalIDs)
}

func validName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s name is empty", ErrInvalid, kind)
	}
	if strings.ContainsAny(name, "\x00/") || strings.TrimSpace(name) != name {
		return fmt.Errorf("%w: %s name %q contains '/', NUL or surrounding spaces", ErrInvalid, kind, name)
	}
	return nil
}

func checkReservedKeys(what string, m map[string]string) error {
	for _, k := range []string{OwnerKey, GenerationKey} {
		if _, ok := m[k]; ok {
			return fmt.Errorf("%w: %s: external_ids key %q is reserved for ownership; remove it", ErrInvalid, what, k)
		}
	}
	return nil
}

// tagged returns m plus the ownership keys for owner and generation.
func tagged(m map[string]string, owner string, gen int64) map[string]string {
	out := make(map[string]string, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	out[OwnerKey] = owner
	out[GenerationKey] = fmt.Sprint(gen)
	return out
}

// ownedBy reports whether external_ids carry owner's tag.
func ownedBy(extIDs map[string]string, owner string) bool {
	return extIDs[OwnerKey] == owner
}
