package ovsdb

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/model"
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

// PortOn is the intent for one port: Port, with its interfaces, held by bridge Bridge. Port
// may sit on another bridge today: ensuring it moves it. Port.Interfaces empty means one
// interface named like the port (OVS's plain port); with two or more the port is a bond.
type PortOn struct {
	Bridge string // the bridge that holds the port; required
	Port   model.Port
}

func validateBridge(b *model.Bridge, local *model.Interface) error {
	if err := validName("bridge", b.Name); err != nil {
		return err
	}
	if len(b.Ports) > 0 {
		return fmt.Errorf("%w: bridge %q: the bridge intent carries no ports (it has %d); ensure each with EnsurePort", ErrInvalid, b.Name, len(b.Ports))
	}
	switch b.FailMode {
	case "", "standalone", "secure":
	default:
		return fmt.Errorf("%w: bridge %q: fail_mode %q must be standalone or secure", ErrInvalid, b.Name, b.FailMode)
	}
	for i, t := range b.Controllers {
		if err := ValidControllerTarget(t); err != nil {
			return fmt.Errorf("bridge %q: %w", b.Name, err)
		}
		if slices.Contains(b.Controllers[:i], t) {
			return fmt.Errorf("%w: bridge %q lists controller %q twice", ErrInvalid, b.Name, t)
		}
	}
	if err := validateExport(b); err != nil {
		return err
	}
	if probs := model.CheckMirrors(b.Mirrors, nil); len(probs) > 0 {
		return fmt.Errorf("%w: bridge %q: mirrors%s", ErrInvalid, b.Name, probs[0])
	}
	if local != nil {
		l := localPort(b.Name, local)
		if err := l.validate(); err != nil {
			return fmt.Errorf("bridge %q local interface: %w", b.Name, err)
		}
	}
	return checkReservedKeys("bridge "+b.Name, b.ExternalIDs)
}

// interfaces returns the port's interfaces, defaulting to one named like the port.
func (s *PortOn) interfaces() []model.Interface {
	if len(s.Port.Interfaces) == 0 {
		return []model.Interface{{Name: s.Port.Name}}
	}
	return s.Port.Interfaces
}

func (s *PortOn) validate() error {
	p := &s.Port
	if err := validName("port", p.Name); err != nil {
		return err
	}
	if s.Bridge == "" {
		return fmt.Errorf("%w: port %q: no bridge given", ErrInvalid, p.Name)
	}
	if p.Tag != nil && (*p.Tag < 0 || *p.Tag > 4095) {
		return fmt.Errorf("%w: port %q: tag %d out of range 0-4095", ErrInvalid, p.Name, *p.Tag)
	}
	for _, v := range p.Trunks {
		if v < 0 || v > 4095 {
			return fmt.Errorf("%w: port %q: trunk %d out of range 0-4095", ErrInvalid, p.Name, v)
		}
	}
	seen := map[string]bool{}
	for _, ifc := range s.interfaces() {
		if err := validName("interface", ifc.Name); err != nil {
			return fmt.Errorf("port %q: %w", p.Name, err)
		}
		if seen[ifc.Name] {
			return fmt.Errorf("%w: port %q lists interface %q twice", ErrInvalid, p.Name, ifc.Name)
		}
		seen[ifc.Name] = true
		if ifc.OFPortRequest != nil && (*ifc.OFPortRequest < 1 || *ifc.OFPortRequest > 65279) {
			return fmt.Errorf("%w: interface %q: ofport_request %d out of range 1-65279", ErrInvalid, ifc.Name, *ifc.OFPortRequest)
		}
		if ifc.MTURequest != nil && *ifc.MTURequest < 1 {
			return fmt.Errorf("%w: interface %q: mtu_request %d must be positive", ErrInvalid, ifc.Name, *ifc.MTURequest)
		}
		if err := checkReservedKeys("interface "+ifc.Name, ifc.ExternalIDs); err != nil {
			return err
		}
	}
	if err := validatePortObjects(p, s.interfaces()); err != nil {
		return err
	}
	return checkReservedKeys("port "+p.Name, p.ExternalIDs)
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
