package model

import (
	"fmt"
	"slices"
	"strconv"
)

// Bond settings beyond bond_mode and lacp: typed fields that become the Port's bond_updelay
// and bond_downdelay columns and the other_config keys OVS reads for bonds (named on each
// field). They are part of the port: kept converged with it, with no status of their own.

// Bounds and values of bond settings.
const (
	// MaxBondDelay bounds bond_updelay and bond_downdelay, in ms (ovsplane's bound: a minute).
	MaxBondDelay = 60_000
	// MaxMiimonInterval bounds bond-miimon-interval, in ms (ovsplane's bound: a minute).
	MaxMiimonInterval = 60_000
	// MaxRebalanceInterval bounds bond-rebalance-interval, in ms (vswitch.xml: 0..2^31-1).
	MaxRebalanceInterval = 1<<31 - 1
)

// BondDetectModes and LACPTimes list the accepted values ("" is OVS's default: carrier, slow).
// Callers must not modify them.
var (
	BondDetectModes = []string{"", "carrier", "miimon"}
	LACPTimes       = []string{"", "fast", "slow"}
)

// Bond is a bond port's link failure detection, LACP timing and rebalancing.
type Bond struct {
	// Updelay and Downdelay (0..MaxBondDelay ms) are bond_updelay and bond_downdelay: how long
	// a member's link must stay up (down) before it counts as up (down); nil is 0.
	Updelay   *int `mapstructure:"updelay" yaml:"updelay,omitempty"`
	Downdelay *int `mapstructure:"downdelay" yaml:"downdelay,omitempty"`
	// DetectMode is other_config:bond-detect-mode, one of BondDetectModes; MiimonInterval
	// (1..MaxMiimonInterval ms) is bond-miimon-interval, only with DetectMode miimon.
	DetectMode     string `mapstructure:"detect_mode" yaml:"detect_mode,omitempty"`
	MiimonInterval *int   `mapstructure:"miimon_interval" yaml:"miimon_interval,omitempty"`
	// RebalanceInterval (0..MaxRebalanceInterval ms, 0 off) is bond-rebalance-interval, for
	// balance-slb and balance-tcp.
	RebalanceInterval *int `mapstructure:"rebalance_interval" yaml:"rebalance_interval,omitempty"`
	// LACPTime (one of LACPTimes) and LACPFallbackAB are lacp-time and lacp-fallback-ab, only
	// with lacp active or passive.
	LACPTime       string `mapstructure:"lacp_time" yaml:"lacp_time,omitempty"`
	LACPFallbackAB *bool  `mapstructure:"lacp_fallback_ab" yaml:"lacp_fallback_ab,omitempty"`
	// Primary is bond-primary: the member interface made active when it is up (active-backup,
	// or balance-tcp falling back to it).
	Primary string `mapstructure:"primary" yaml:"primary,omitempty"`
}

// BondOtherConfigKeys are the Port other_config keys Bond sets; Port.OtherConfig must not set
// them too. Callers must not modify it.
var BondOtherConfigKeys = []string{"bond-detect-mode", "bond-miimon-interval", "bond-rebalance-interval", "lacp-time", "lacp-fallback-ab", "bond-primary"}

// CheckBond returns every problem of p's bond settings, with paths relative to the port
// ("bond.primary").
func (p *Port) CheckBond() []FieldProblem {
	b := p.Bond
	if b == nil {
		return nil
	}
	var out []FieldProblem
	add := func(path, format string, args ...any) {
		out = append(out, FieldProblem{"bond." + path, fmt.Sprintf(format, args...)})
	}
	if len(p.Interfaces) < 2 {
		add("", "set on a port with %d interface(s); bond settings need two or more (a bond)", len(p.Interfaces))
		out[0].Path = "bond"
	}
	checkRange(add, "updelay", b.Updelay, 0, MaxBondDelay)
	checkRange(add, "downdelay", b.Downdelay, 0, MaxBondDelay)
	if !slices.Contains(BondDetectModes, b.DetectMode) {
		add("detect_mode", "unknown detect mode %q (%s)", b.DetectMode, quoteList(BondDetectModes))
	}
	if b.MiimonInterval != nil {
		if b.DetectMode != "miimon" {
			add("miimon_interval", "set without detect_mode: miimon (OVS ignores it otherwise); set detect_mode or remove it")
		}
		checkRange(add, "miimon_interval", b.MiimonInterval, 1, MaxMiimonInterval)
	}
	if b.RebalanceInterval != nil {
		if p.BondMode != "balance-slb" && p.BondMode != "balance-tcp" {
			add("rebalance_interval", "set on a %q bond; only balance-slb and balance-tcp rebalance: set bond_mode or remove it", p.BondMode)
		}
		checkRange(add, "rebalance_interval", b.RebalanceInterval, 0, MaxRebalanceInterval)
	}
	lacp := p.LACP == "active" || p.LACP == "passive"
	if !slices.Contains(LACPTimes, b.LACPTime) {
		add("lacp_time", "unknown LACP time %q (%s)", b.LACPTime, quoteList(LACPTimes))
	} else if b.LACPTime != "" && !lacp {
		add("lacp_time", "set without lacp active or passive (OVS ignores it otherwise); set lacp or remove it")
	}
	if b.LACPFallbackAB != nil && !lacp {
		add("lacp_fallback_ab", "set without lacp active or passive (OVS ignores it otherwise); set lacp or remove it")
	}
	if b.Primary != "" && !slices.ContainsFunc(p.Interfaces, func(in Interface) bool { return in.Name == b.Primary }) {
		add("primary", "%q is not an interface of this bond; name one of its interfaces", b.Primary)
	}
	for _, k := range BondOtherConfigKeys {
		if _, set := p.OtherConfig[k]; set {
			out = append(out, FieldProblem{"other_config." + k, "set by the bond settings; remove it from other_config and use bond"})
		}
	}
	return out
}

// OtherConfig returns the Port other_config keys b sets.
func (b *Bond) OtherConfig() map[string]string {
	m := map[string]string{}
	if b == nil {
		return m
	}
	if b.DetectMode != "" {
		m["bond-detect-mode"] = b.DetectMode
	}
	putInt(m, "bond-miimon-interval", b.MiimonInterval)
	putInt(m, "bond-rebalance-interval", b.RebalanceInterval)
	if b.LACPTime != "" {
		m["lacp-time"] = b.LACPTime
	}
	if b.LACPFallbackAB != nil {
		m["lacp-fallback-ab"] = strconv.FormatBool(*b.LACPFallbackAB)
	}
	if b.Primary != "" {
		m["bond-primary"] = b.Primary
	}
	return m
}

// Canonical returns a deep copy of b; nil stays nil.
func (b *Bond) Canonical() *Bond {
	if b == nil {
		return nil
	}
	c := *b
	c.Updelay, c.Downdelay, c.MiimonInterval, c.RebalanceInterval = cloneInt(b.Updelay), cloneInt(b.Downdelay), cloneInt(b.MiimonInterval), cloneInt(b.RebalanceInterval)
	if b.LACPFallbackAB != nil {
		v := *b.LACPFallbackAB
		c.LACPFallbackAB = &v
	}
	return &c
}
