package model

import (
	"fmt"
	"slices"
	"strings"
)

// Port mirroring: a bridge's mirrors, each one row of OVS's Mirror table referenced from the
// bridge's mirrors column. A mirror selects packets (all, or by the ports they enter or leave,
// optionally only some VLANs) and sends a copy out of one port of the bridge or into a VLAN.
// Ports are named; the rows refer to them by UUID, weakly (a deleted port drops out of the
// mirror, and the daemon puts it back when the port returns).

// KindMirror is the kind of a mirror's status, named "BRIDGE/MIRROR", with Bridge set.
const KindMirror Kind = "mirror"

// Bounds of mirrors.
const (
	// MaxMirrors is the most mirrors one bridge may have (ovsplane's bound; ovs-vswitchd's
	// datapaths support 32).
	MaxMirrors = 32
	// MaxMirrorNameBytes bounds a mirror's name (ovsplane's bound).
	MaxMirrorNameBytes = 64
	// MaxMirrorPorts bounds each of a mirror's port lists (ovsplane's bound).
	MaxMirrorPorts = 1024
	// MinSnaplen and MaxSnaplen bound Mirror.snaplen (vswitch.xml: 14..65535).
	MinSnaplen, MaxSnaplen = 14, 65535
)

// Mirror is one mirror of a bridge (OVS's Mirror table).
type Mirror struct {
	// Name is unique among the bridge's mirrors: 1..MaxMirrorNameBytes bytes, no control
	// characters or '/'.
	Name string `mapstructure:"name" yaml:"name"`
	// SelectAll selects every packet on the bridge; otherwise SelectSrcPorts (packets entering
	// these ports) and SelectDstPorts (leaving them), at least one port between them.
	SelectAll      bool     `mapstructure:"select_all" yaml:"select_all,omitempty"`
	SelectSrcPorts []string `mapstructure:"select_src_port" yaml:"select_src_port,omitempty"`
	SelectDstPorts []string `mapstructure:"select_dst_port" yaml:"select_dst_port,omitempty"`
	// SelectVLANs (0..4095) narrows the selection to these VLANs; empty is all.
	SelectVLANs []int `mapstructure:"select_vlan" yaml:"select_vlan,omitempty"`
	// OutputPort (a port of the bridge) or OutputVLAN (1..4095), exactly one, is where the
	// copies go.
	OutputPort string `mapstructure:"output_port" yaml:"output_port,omitempty"`
	OutputVLAN *int   `mapstructure:"output_vlan" yaml:"output_vlan,omitempty"`
	// Snaplen (14..65535) truncates the copies; nil sends them whole.
	Snaplen *int `mapstructure:"snaplen" yaml:"snaplen,omitempty"`
}

// CheckMirrors returns every problem of a bridge's mirrors, with paths relative to the list
// ("[1].output_port"). ports, when not nil, are the names of the bridge's ports (the file's
// desired state knows them; the API applies ports separately and passes nil).
func CheckMirrors(mirrors []Mirror, ports []string) []FieldProblem {
	if len(mirrors) > MaxMirrors {
		return []FieldProblem{{"", fmt.Sprintf("%d mirrors, at most %d per bridge", len(mirrors), MaxMirrors)}}
	}
	var out []FieldProblem
	seen := map[string]int{}
	for i, m := range mirrors {
		p := fmt.Sprintf("[%d]", i)
		add := func(path, format string, args ...any) {
			out = append(out, FieldProblem{p + "." + path, fmt.Sprintf(format, args...)})
		}
		switch {
		case m.Name == "":
			add("name", "required")
		case len(m.Name) > MaxMirrorNameBytes || strings.ContainsFunc(m.Name, func(r rune) bool { return isControl(r) || r == '/' }):
			add("name", "must be 1..%d bytes without control characters or '/'", MaxMirrorNameBytes)
		default:
			if j, dup := seen[m.Name]; dup {
				add("name", "duplicate mirror name %q (also [%d]); give each mirror its own name", m.Name, j)
			} else {
				seen[m.Name] = i
			}
		}
		if m.SelectAll && len(m.SelectSrcPorts)+len(m.SelectDstPorts) > 0 {
			add("select_all", "set together with select_src_port/select_dst_port, which it makes moot; keep one")
		}
		if !m.SelectAll && len(m.SelectSrcPorts)+len(m.SelectDstPorts) == 0 {
			add("select_all", "the mirror selects nothing: set select_all: true, or list ports in select_src_port or select_dst_port")
		}
		for _, l := range []struct {
			key   string
			names []string
		}{{"select_src_port", m.SelectSrcPorts}, {"select_dst_port", m.SelectDstPorts}} {
			if len(l.names) > MaxMirrorPorts {
				add(l.key, "%d ports, at most %d", len(l.names), MaxMirrorPorts)
				continue
			}
			for j, n := range l.names {
				path := fmt.Sprintf("%s[%d]", l.key, j)
				switch {
				case n == "":
					add(path, "empty port name")
				case slices.Index(l.names[:j], n) >= 0:
					add(path, "duplicate port %q; list each port once", n)
				case ports != nil && !slices.Contains(ports, n):
					add(path, "no port %q on this bridge; name one of its ports", n)
				}
			}
		}
		if len(m.SelectVLANs) > 4096 {
			add("select_vlan", "%d VLANs, at most 4096", len(m.SelectVLANs))
		}
		for j, v := range m.SelectVLANs {
			if v < 0 || v > 4095 {
				add(fmt.Sprintf("select_vlan[%d]", j), "VLAN %d out of range (0..4095)", v)
			}
		}
		switch {
		case m.OutputPort == "" && m.OutputVLAN == nil:
			add("output_port", "required: the port the copies leave by (or output_vlan, a VLAN 1..4095)")
		case m.OutputPort != "" && m.OutputVLAN != nil:
			add("output_vlan", "set together with output_port; a mirror has one output: keep one")
		case m.OutputPort != "":
			if ports != nil && !slices.Contains(ports, m.OutputPort) {
				add("output_port", "no port %q on this bridge; name one of its ports", m.OutputPort)
			}
			if slices.Contains(m.SelectSrcPorts, m.OutputPort) || slices.Contains(m.SelectDstPorts, m.OutputPort) {
				add("output_port", "%q is also selected; OVS never mirrors to a selected port: pick another output", m.OutputPort)
			}
		default:
			checkRange(func(path, format string, args ...any) { add(path, format, args...) }, "output_vlan", m.OutputVLAN, 1, 4095)
		}
		checkRange(func(path, format string, args ...any) { add(path, format, args...) }, "snaplen", m.Snaplen, MinSnaplen, MaxSnaplen)
	}
	return out
}

// canonicalMirrors returns deep copies of mirrors sorted by name, their lists sorted, nil when
// there are none.
func canonicalMirrors(mirrors []Mirror) []Mirror {
	if len(mirrors) == 0 {
		return nil
	}
	out := make([]Mirror, len(mirrors))
	for i, m := range mirrors {
		out[i] = m.Canonical()
	}
	slices.SortFunc(out, func(a, b Mirror) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Canonical returns a deep copy of m with its lists sorted (empty ones nil).
func (m Mirror) Canonical() Mirror {
	c := m
	c.SelectSrcPorts, c.SelectDstPorts = sortedCopy(m.SelectSrcPorts), sortedCopy(m.SelectDstPorts)
	c.SelectVLANs = sortedCopy(m.SelectVLANs)
	c.OutputVLAN, c.Snaplen = cloneInt(m.OutputVLAN), cloneInt(m.Snaplen)
	return c
}
