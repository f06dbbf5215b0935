package veth

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strings"
)

// Limits of the kernel and of this package.
const (
	// MaxNameLen is the longest interface name the kernel accepts (IFNAMSIZ - 1).
	MaxNameLen = 15
	// MinMTU and MaxMTU bound Spec.MTU: IPv4's minimum and the veth driver's maximum.
	MinMTU, MaxMTU = 68, 65535
	// MaxNetnsNameLen bounds Spec.Netns (a file name under the namespace directory).
	MaxNetnsNameLen = 64
)

// Sentinel errors, for decisions with errors.Is. Returned errors wrap them and name the object.
var (
	// ErrInvalid: the Spec is malformed; a *FieldError says which field.
	ErrInvalid = errors.New("invalid veth spec")
	// ErrNotOwned: an interface or namespace exists but does not carry this owner's mark.
	ErrNotOwned = errors.New("not owned by this plugin")
	// ErrConflict: a name the pair needs is taken by an interface this owner did not create.
	ErrConflict = errors.New("name already in use")
	// ErrNetnsNotFound: the named namespace does not exist and Spec.CreateNetns is false.
	ErrNetnsNotFound = errors.New("network namespace not found")
	// ErrNotFound: no pair of this owner exists for the port.
	ErrNotFound = errors.New("veth pair not found")
)

// FieldError is a validation error for one field of a Spec. It wraps ErrInvalid.
type FieldError struct {
	// Field names the field as the plugin's options do: "port", "peer", "netns", "address", "mtu".
	Field string
	// Reason says what is wrong, for humans.
	Reason string
}

// Error returns "<field>: <reason>".
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap returns ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Spec describes one veth pair. Port is required; every other zero field means its default.
type Spec struct {
	// Port is the OVS port name; the host end gets this name (OVS opens a "system" interface
	// by its name).
	Port string
	// Peer is the peer end's name; DefaultPeerName(Port) when empty.
	Peer string
	// Netns is the named network namespace (a file under the Manager's namespace directory,
	// /run/netns by default) the peer end lives in; empty leaves it in the host namespace.
	Netns string
	// CreateNetns creates Netns (marked as this owner's) when it does not exist.
	CreateNetns bool
	// Address is an optional address with prefix length for the peer end.
	Address netip.Prefix
	// MTU of both ends; zero leaves the kernel's default (1500).
	MTU int
	// KeepOffloads leaves the ends' checksum and segmentation offloads on. By default they are
	// turned off on both ends, which OVS's userspace datapath (af_packet) needs for TCP to work;
	// on the kernel datapath they may stay on.
	KeepOffloads bool
	// Bridge is a label recorded in the host end's mark (the OVS bridge the port is on), so
	// List can report it; empty for none. Changing it relabels the pair, nothing else.
	Bridge string
}

// DefaultPeerName derives the peer end's name from the port name: "<port>-p" when it fits in
// MaxNameLen, else the port name's first 8 characters, "-" and 6 hex digits of its FNV-1a hash,
// so that distinct long port names still get distinct peers.
func DefaultPeerName(port string) string {
	if len(port)+2 <= MaxNameLen {
		return port + "-p"
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(port))
	return fmt.Sprintf("%s-%06x", port[:8], h.Sum32()&0xffffff)
}

// WithDefaults returns the spec with Peer filled in.
func (s Spec) WithDefaults() Spec {
	if s.Peer == "" && s.Port != "" {
		s.Peer = DefaultPeerName(s.Port)
	}
	return s
}

// Problems splits an error of Validate into its problems, one *FieldError each; nil for nil.
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Validate checks the spec (after WithDefaults) and returns every problem found, each a
// *FieldError, joined with errors.Join; nil when the spec is valid.
func (s Spec) Validate() error {
	s = s.WithDefaults()
	var errs []error
	if err := checkIfName(s.Port); err != nil {
		errs = append(errs, &FieldError{Field: "port", Reason: err.Error()})
	}
	if err := checkIfName(s.Peer); err != nil {
		errs = append(errs, &FieldError{Field: "peer", Reason: err.Error()})
	} else if s.Peer == s.Port && s.Netns == "" {
		errs = append(errs, &FieldError{Field: "peer", Reason: "must differ from the port name when both ends share a namespace"})
	}
	if s.Netns != "" {
		if err := checkNetnsName(s.Netns); err != nil {
			errs = append(errs, &FieldError{Field: "netns", Reason: err.Error()})
		}
	} else if s.CreateNetns {
		errs = append(errs, &FieldError{Field: "netns", Reason: "create requested without a namespace name"})
	}
	if s.Address.IsValid() && s.Address.Addr().IsUnspecified() {
		errs = append(errs, &FieldError{Field: "address", Reason: "unspecified address " + s.Address.String()})
	}
	if strings.ContainsAny(s.Bridge, " \t\n") {
		errs = append(errs, &FieldError{Field: "bridge", Reason: fmt.Sprintf("bridge name %q contains white space", s.Bridge)})
	}
	if s.MTU != 0 && (s.MTU < MinMTU || s.MTU > MaxMTU) {
		errs = append(errs, &FieldError{Field: "mtu", Reason: fmt.Sprintf("%d out of range [%d, %d]", s.MTU, MinMTU, MaxMTU)})
	}
	return errors.Join(errs...)
}

// checkIfName applies the kernel's rules for interface names (dev_valid_name).
func checkIfName(name string) error {
	switch {
	case name == "":
		return errors.New("empty interface name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("interface name %q longer than %d characters", name, MaxNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("interface name %q not allowed", name)
	case strings.ContainsAny(name, "/: \t\n"):
		return fmt.Errorf("interface name %q contains '/', ':' or white space", name)
	}
	return nil
}

// checkNetnsName accepts what `ip netns add` accepts and is a single path element.
func checkNetnsName(name string) error {
	switch {
	case len(name) > MaxNetnsNameLen:
		return fmt.Errorf("namespace name %q longer than %d characters", name, MaxNetnsNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("namespace name %q not allowed", name)
	case strings.ContainsAny(name, "/ \t\n"):
		return fmt.Errorf("namespace name %q contains '/' or white space", name)
	}
	return nil
}

// The marks written into interface aliases (see the package documentation).
const (
	markPrefix = "ovsplane/"
	markVeth   = "veth"
	endHost    = "host"
	endPeer    = "peer"
	noNetns    = "-" // also: no bridge
)

// mark is a parsed ownership mark.
type mark struct {
	owner, kind string
	fields      map[string]string
}

// hostMark returns the alias of the host end of s.
func hostMark(owner string, s Spec) string {
	ns := s.Netns
	if ns == "" {
		ns = noNetns
	}
	br := s.Bridge
	if br == "" {
		br = noNetns
	}
	return fmt.Sprintf("%s%s %s end=%s port=%s peer=%s netns=%s bridge=%s", markPrefix, owner, markVeth, endHost, s.Port, s.Peer, ns, br)
}

// peerMark returns the alias of the peer end of s.
func peerMark(owner string, s Spec) string {
	return fmt.Sprintf("%s%s %s end=%s port=%s host=%s", markPrefix, owner, markVeth, endPeer, s.Port, s.Port)
}

// netnsMark returns the alias of the loopback of a namespace owner created.
func netnsMark(owner string) string { return markPrefix + owner + " netns created" }

// parseMark parses an alias; ok is false when it is not an ovsplane mark.
func parseMark(alias string) (m mark, ok bool) {
	f := strings.Fields(alias)
	if len(f) < 2 || !strings.HasPrefix(f[0], markPrefix) {
		return mark{}, false
	}
	m = mark{owner: strings.TrimPrefix(f[0], markPrefix), kind: f[1], fields: map[string]string{}}
	for _, kv := range f[2:] {
		if k, v, found := strings.Cut(kv, "="); found {
			m.fields[k] = v
		}
	}
	return m, m.owner != ""
}

// hostSpec rebuilds the Spec's names from a host end's mark; ok is false for any other mark.
func (m mark) hostSpec() (s Spec, ok bool) {
	if m.kind != markVeth || m.fields["end"] != endHost || m.fields["port"] == "" || m.fields["peer"] == "" {
		return Spec{}, false
	}
	s = Spec{Port: m.fields["port"], Peer: m.fields["peer"], Netns: m.fields["netns"], Bridge: m.fields["bridge"]}
	if s.Netns == noNetns {
		s.Netns = ""
	}
	if s.Bridge == noNetns {
		s.Bridge = ""
	}
	return s, true
}
