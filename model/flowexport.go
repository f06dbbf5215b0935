package model

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Flow export: a bridge's NetFlow, IPFIX and sFlow settings, each one OVSDB row (NetFlow,
// IPFIX, sFlow) referenced from the bridge's column of the same name, and its IPFIX collector
// sets for flow-based sampling (Flow_Sample_Collector_Set rows, which OpenFlow's sample action
// names by id). The bounds below follow vswitch.xml where it gives one and are ovsplane's own
// where it gives none (marked so).

// Kinds of the flow export statuses: one per bridge and setting, named like the bridge (a
// collector set: "BRIDGE/ID"), with Bridge set.
const (
	KindNetFlow      Kind = "netflow"
	KindIPFIX        Kind = "ipfix"
	KindSFlow        Kind = "sflow"
	KindCollectorSet Kind = "collector_set"
)

// Bounds of the flow export settings.
const (
	// MaxExportTargets is the most collectors one NetFlow, IPFIX or sFlow setting may list
	// (ovsplane's bound).
	MaxExportTargets = 16
	// MaxExportTargetBytes bounds one target's text.
	MaxExportTargetBytes = 64
	// MaxNetFlowActiveTimeout is the longest NetFlow active timeout, in seconds (ovsplane's
	// bound: one day).
	MaxNetFlowActiveTimeout = 86400
	// MaxIPFIXCacheActiveTimeout is vswitch.xml's bound on IPFIX.cache_active_timeout.
	MaxIPFIXCacheActiveTimeout = 4200
	// MaxUint32 bounds IPFIX's sampling, observation ids, cache size and the collector set id.
	MaxUint32 = 1<<32 - 1
	// MaxSFlowHeader bounds sFlow's header bytes (ovsplane's bound: a jumbo frame).
	MaxSFlowHeader = 9216
	// MaxSFlowPolling bounds sFlow's counter polling interval, in seconds (ovsplane's bound).
	MaxSFlowPolling = 3600
	// MaxSFlowAgentBytes bounds sFlow's agent (an interface name or an IP address).
	MaxSFlowAgentBytes = 64
	// MaxCollectorSets is the most IPFIX collector sets one bridge may have (ovsplane's bound).
	MaxCollectorSets = 64
	// MaxVirtualObsIDBytes is vswitch.xml's bound on IPFIX other_config:virtual_obs_id.
	MaxVirtualObsIDBytes = 254
)

// NetFlow is a bridge's NetFlow v5 export (OVS's NetFlow table).
type NetFlow struct {
	// Targets are the collectors, each IPv4:PORT or [IPv6]:PORT; one at least.
	Targets []string `mapstructure:"targets" yaml:"targets"`
	// ActiveTimeout is OVS's active_timeout in seconds: 0 means OVS's default (600), -1
	// disables active expiration, otherwise 1..MaxNetFlowActiveTimeout.
	ActiveTimeout int `mapstructure:"active_timeout" yaml:"active_timeout,omitempty"`
	// EngineType and EngineID (0..255) go into every datagram's header; nil lets OVS derive
	// them from the datapath.
	EngineType *int `mapstructure:"engine_type" yaml:"engine_type,omitempty"`
	EngineID   *int `mapstructure:"engine_id" yaml:"engine_id,omitempty"`
	// AddIDToInterface puts the low 7 bits of EngineID into the interface fields (several
	// bridges exporting to one collector).
	AddIDToInterface bool `mapstructure:"add_id_to_interface" yaml:"add_id_to_interface,omitempty"`
}

// IPFIX is an IPFIX export (OVS's IPFIX table): a bridge's packet sampling, or the settings of
// a collector set.
type IPFIX struct {
	// Targets are the collectors, each IPv4:PORT or [IPv6]:PORT; one at least.
	Targets []string `mapstructure:"targets" yaml:"targets"`
	// Sampling is one packet in Sampling (1..2^32-1); nil is OVS's default (400). Like the
	// observation ids and enable-input/output-sampling, per-bridge sampling only: a collector
	// set refuses them (the OpenFlow sample action gives them).
	Sampling *int `mapstructure:"sampling" yaml:"sampling,omitempty"`
	// ObsDomainID and ObsPointID (0..2^32-1) are the IPFIX observation domain and point.
	ObsDomainID *int `mapstructure:"obs_domain_id" yaml:"obs_domain_id,omitempty"`
	ObsPointID  *int `mapstructure:"obs_point_id" yaml:"obs_point_id,omitempty"`
	// CacheActiveTimeout (0..4200 s) and CacheMaxFlows (0..2^32-1) size OVS's flow cache; nil
	// or 0 disables it.
	CacheActiveTimeout *int `mapstructure:"cache_active_timeout" yaml:"cache_active_timeout,omitempty"`
	CacheMaxFlows      *int `mapstructure:"cache_max_flows" yaml:"cache_max_flows,omitempty"`
	// OtherConfig holds IPFIXOtherConfigKeys only: enable-tunnel-sampling,
	// enable-input-sampling, enable-output-sampling ("true" or "false"), virtual_obs_id.
	OtherConfig map[string]string `mapstructure:"other_config" yaml:"other_config,omitempty"`
}

// SFlow is a bridge's sFlow export (OVS's sFlow table).
type SFlow struct {
	// Targets are the collectors, each IPv4:PORT or [IPv6]:PORT; one at least.
	Targets []string `mapstructure:"targets" yaml:"targets"`
	// Agent is the interface name or IP address whose address identifies this switch; ""
	// lets OVS choose.
	Agent string `mapstructure:"agent" yaml:"agent,omitempty"`
	// Header is how many bytes of a sampled packet are sent (1..9216); nil is OVS's 128.
	Header *int `mapstructure:"header" yaml:"header,omitempty"`
	// Polling is the counter polling interval in seconds (0..3600, 0 off); nil is OVS's 30.
	Polling *int `mapstructure:"polling" yaml:"polling,omitempty"`
	// Sampling is one packet in Sampling (1..2^32-1); nil is OVS's 400.
	Sampling *int `mapstructure:"sampling" yaml:"sampling,omitempty"`
}

// CollectorSet is one IPFIX collector set of a bridge (OVS's Flow_Sample_Collector_Set):
// OpenFlow's sample(collector_set_id=ID,…) action sends its samples to IPFIX's targets.
type CollectorSet struct {
	// ID is the collector_set_id (0..2^32-1), unique on its bridge.
	ID    int   `mapstructure:"id" yaml:"id"`
	IPFIX IPFIX `mapstructure:"ipfix" yaml:"ipfix"`
}

// IPFIXOtherConfigKeys are the IPFIX.other_config keys the configuration accepts. Callers must
// not modify it.
var IPFIXOtherConfigKeys = []string{"enable-input-sampling", "enable-output-sampling", "enable-tunnel-sampling", "virtual_obs_id"}

// FieldProblem is one problem of a flow export setting: Path is relative to the setting
// ("targets[1]"), Message says what is accepted.
type FieldProblem struct {
	Path, Message string
}

// String renders the problem as "path: message".
func (p FieldProblem) String() string { return p.Path + ": " + p.Message }

// Check returns every problem of n (none when it is acceptable).
func (n *NetFlow) Check() []FieldProblem {
	var out []FieldProblem
	add := func(path, format string, args ...any) {
		out = append(out, FieldProblem{path, fmt.Sprintf(format, args...)})
	}
	checkTargets(add, n.Targets)
	if n.ActiveTimeout < -1 || n.ActiveTimeout > MaxNetFlowActiveTimeout {
		add("active_timeout", "%d is out of range: use -1 (no active expiry), 0 (OVS's default, 600) or 1..%d seconds", n.ActiveTimeout, MaxNetFlowActiveTimeout)
	}
	checkRange(add, "engine_type", n.EngineType, 0, 255)
	checkRange(add, "engine_id", n.EngineID, 0, 255)
	return out
}

// check returns every problem of x (none when it is acceptable); sampling is a bridge-level
// rate, refused in a collector set (flowBased).
func (x *IPFIX) check(flowBased bool) []FieldProblem {
	var out []FieldProblem
	add := func(path, format string, args ...any) {
		out = append(out, FieldProblem{path, fmt.Sprintf(format, args...)})
	}
	checkTargets(add, x.Targets)
	if flowBased {
		// vswitch.xml: these affect per-bridge sampling only; the sample action gives them.
		_, in := x.OtherConfig["enable-input-sampling"]
		_, out := x.OtherConfig["enable-output-sampling"]
		for _, k := range []struct {
			key string
			set bool
		}{{"sampling", x.Sampling != nil}, {"obs_domain_id", x.ObsDomainID != nil}, {"obs_point_id", x.ObsPointID != nil},
			{"other_config.enable-input-sampling", in}, {"other_config.enable-output-sampling", out}} {
			if k.set {
				add(k.key, "a collector set takes this from the OpenFlow sample action (OVS uses it for per-bridge sampling only); remove it")
			}
		}
	}
	checkRange(add, "sampling", x.Sampling, 1, MaxUint32)
	checkRange(add, "obs_domain_id", x.ObsDomainID, 0, MaxUint32)
	checkRange(add, "obs_point_id", x.ObsPointID, 0, MaxUint32)
	checkRange(add, "cache_active_timeout", x.CacheActiveTimeout, 0, MaxIPFIXCacheActiveTimeout)
	checkRange(add, "cache_max_flows", x.CacheMaxFlows, 0, MaxUint32)
	for _, k := range slices.Sorted(maps.Keys(x.OtherConfig)) {
		v := x.OtherConfig[k]
		switch k {
		case "virtual_obs_id":
			if len(v) > MaxVirtualObsIDBytes || strings.ContainsFunc(v, isControl) {
				add("other_config.virtual_obs_id", "must be at most %d bytes without control characters", MaxVirtualObsIDBytes)
			}
		case "enable-input-sampling", "enable-output-sampling", "enable-tunnel-sampling":
			if v != "true" && v != "false" {
				add("other_config."+k, "%q is not \"true\" or \"false\"", v)
			}
		default:
			add("other_config."+k, "unknown key; IPFIX accepts %s", strings.Join(IPFIXOtherConfigKeys, ", "))
		}
	}
	return out
}

// Check returns every problem of a bridge's IPFIX sampling (none when it is acceptable).
func (x *IPFIX) Check() []FieldProblem { return x.check(false) }

// Check returns every problem of s (none when it is acceptable).
func (s *SFlow) Check() []FieldProblem {
	var out []FieldProblem
	add := func(path, format string, args ...any) {
		out = append(out, FieldProblem{path, fmt.Sprintf(format, args...)})
	}
	checkTargets(add, s.Targets)
	if len(s.Agent) > MaxSFlowAgentBytes || strings.ContainsFunc(s.Agent, func(r rune) bool { return isControl(r) || r == ' ' }) {
		add("agent", "must be an interface name or IP address of at most %d bytes without white space", MaxSFlowAgentBytes)
	}
	checkRange(add, "header", s.Header, 1, MaxSFlowHeader)
	checkRange(add, "polling", s.Polling, 0, MaxSFlowPolling)
	checkRange(add, "sampling", s.Sampling, 1, MaxUint32)
	return out
}

// CheckCollectorSets returns every problem of a bridge's collector sets, with paths relative
// to the list ("[1].ipfix.targets[0]").
func CheckCollectorSets(sets []CollectorSet) []FieldProblem {
	var out []FieldProblem
	if len(sets) > MaxCollectorSets {
		return []FieldProblem{{"", fmt.Sprintf("%d collector sets, at most %d per bridge", len(sets), MaxCollectorSets)}}
	}
	seen := map[int]int{}
	for i, cs := range sets {
		p := fmt.Sprintf("[%d]", i)
		if cs.ID < 0 || cs.ID > MaxUint32 {
			out = append(out, FieldProblem{p + ".id", fmt.Sprintf("%d is out of range 0..%d", cs.ID, MaxUint32)})
		} else if j, dup := seen[cs.ID]; dup {
			out = append(out, FieldProblem{p + ".id", fmt.Sprintf("duplicate collector set id %d (also [%d]); give each set its own id", cs.ID, j)})
		} else {
			seen[cs.ID] = i
		}
		for _, fp := range cs.IPFIX.check(true) {
			out = append(out, FieldProblem{p + ".ipfix." + fp.Path, fp.Message})
		}
	}
	return out
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func checkRange(add func(string, string, ...any), path string, v *int, lo, hi int) {
	if v != nil && (*v < lo || *v > hi) {
		add(path, "%d is out of range %d..%d", *v, lo, hi)
	}
}

func checkTargets(add func(string, string, ...any), targets []string) {
	switch {
	case len(targets) == 0:
		add("targets", "required: list at least one collector as IPv4:PORT or [IPv6]:PORT")
		return
	case len(targets) > MaxExportTargets:
		add("targets", "%d targets, at most %d", len(targets), MaxExportTargets)
		return
	}
	for i, t := range targets {
		path := fmt.Sprintf("targets[%d]", i)
		if err := CheckExportTarget(t); err != nil {
			add(path, "%v", err)
		} else if j := slices.Index(targets[:i], t); j >= 0 {
			add(path, "duplicate target %q (also targets[%d]); list each collector once", t, j)
		}
	}
}

// CheckExportTarget checks one collector address: an IPv4 address or a bracketed IPv6
// address, a colon and a UDP port 1..65535, as OVS's NetFlow, IPFIX and sFlow targets take
// them (no host names: OVS would resolve them once, at configuration time).
func CheckExportTarget(t string) error {
	if len(t) > MaxExportTargetBytes {
		return fmt.Errorf("target is %d bytes, at most %d", len(t), MaxExportTargetBytes)
	}
	bad := fmt.Errorf("%q is not IPv4:PORT or [IPv6]:PORT (like 192.0.2.10:2055 or [2001:db8::10]:4739)", t)
	ap, err := netip.ParseAddrPort(t)
	if err != nil {
		return bad
	}
	if ap.Addr().Zone() != "" || ap.Addr().Is4In6() {
		return bad
	}
	// ParseAddrPort accepts ports like "02055"; only the canonical form is one OVS parses alike.
	if _, port, _ := strings.Cut(t[strings.LastIndexByte(t, ']')+1:], ":"); port != strconv.Itoa(int(ap.Port())) {
		return bad
	}
	if ap.Port() == 0 {
		return fmt.Errorf("%q has port 0; use the collector's UDP port 1..65535", t)
	}
	return nil
}

// Canonical returns a deep copy of n with its targets sorted.
func (n *NetFlow) Canonical() *NetFlow {
	if n == nil {
		return nil
	}
	c := *n
	c.Targets = sortedCopy(n.Targets)
	c.EngineType, c.EngineID = cloneInt(n.EngineType), cloneInt(n.EngineID)
	return &c
}

// Canonical returns a deep copy of x with its targets sorted and an empty other_config nil.
func (x *IPFIX) Canonical() *IPFIX {
	if x == nil {
		return nil
	}
	c := *x
	c.Targets = sortedCopy(x.Targets)
	c.Sampling, c.ObsDomainID, c.ObsPointID = cloneInt(x.Sampling), cloneInt(x.ObsDomainID), cloneInt(x.ObsPointID)
	c.CacheActiveTimeout, c.CacheMaxFlows = cloneInt(x.CacheActiveTimeout), cloneInt(x.CacheMaxFlows)
	c.OtherConfig = cloneMap(x.OtherConfig)
	return &c
}

// Canonical returns a deep copy of s with its targets sorted.
func (s *SFlow) Canonical() *SFlow {
	if s == nil {
		return nil
	}
	c := *s
	c.Targets = sortedCopy(s.Targets)
	c.Header, c.Polling, c.Sampling = cloneInt(s.Header), cloneInt(s.Polling), cloneInt(s.Sampling)
	return &c
}

// canonicalCollectorSets returns deep copies of sets sorted by id, nil when there are none.
func canonicalCollectorSets(sets []CollectorSet) []CollectorSet {
	if len(sets) == 0 {
		return nil
	}
	out := make([]CollectorSet, len(sets))
	for i, cs := range sets {
		out[i] = CollectorSet{ID: cs.ID, IPFIX: *cs.IPFIX.Canonical()}
	}
	slices.SortFunc(out, func(a, b CollectorSet) int { return a.ID - b.ID })
	return out
}
