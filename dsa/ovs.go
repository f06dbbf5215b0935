package dsa

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The OVS names the capability probe looks for. Upstream Open vSwitch has none of them; Intel's
// dpdk-dma-tracking branch (istokes/ovs) adds them with its vhost async support.
const (
	// VhostAsyncThreshCommand is the appctl command that sets the smallest copy offloaded to
	// DMA. Its presence among ovs-vswitchd's commands is the sign of a vhost-async build.
	VhostAsyncThreshCommand = "netdev-dpdk/set-vhost-async-thresh"
	// VhostAsyncThreshGetCommand reads the threshold back.
	VhostAsyncThreshGetCommand = "netdev-dpdk/get-vhost-async-thresh"
	// VhostAsyncSupportKey is the Open_vSwitch other_config key that turns vhost async on in
	// such a build (read at start: a change needs an ovs-vswitchd restart). Upstream OVS
	// ignores it silently, so writing it proves nothing.
	VhostAsyncSupportKey = "vhost-async-support"
	// VhostAsyncCounterPrefix starts the names of the branch's coverage counters
	// (coverage/show).
	VhostAsyncCounterPrefix = "vhost_async_"
	// VhostAsyncBuildHint is the fix for a build without vhost async.
	VhostAsyncBuildHint = "run an ovs-vswitchd built with vhost async, e.g. Intel's dpdk-dma-tracking branch of github.com/istokes/ovs against its dma-tracking DPDK"
)

// OVSCapability is what the running ovs-vswitchd can do with DSA work queues.
type OVSCapability struct {
	// VhostAsync is true only when ovs-vswitchd has the vhost async appctl commands: the
	// build can hand vhost-user copies to DMA devices.
	VhostAsync bool
	// Reason says in plain words why VhostAsync is what it is, naming the OVS and DPDK
	// versions, and what to do about it.
	Reason string
	// ThreshCommand is the appctl command that sets the offload threshold when VhostAsync,
	// else "".
	ThreshCommand string
	// AsyncSupportKey is the value of other_config:vhost-async-support as OVSDB holds it
	// ("" when unset).
	AsyncSupportKey string
}

// ProbeOVS tells from ovs-vswitchd's facts whether it can use DMA for vhost-user copies:
// commands are its appctl command names (list-commands), otherConfig its Open_vSwitch
// other_config, ovsVersion and dpdkVersion the Open_vSwitch ovs_version and dpdk_version
// columns ("" when unknown or, for DPDK, absent). It never writes anything: a capable build is
// recognised by its commands, not by a key having been accepted. An empty command list means
// the commands could not be read, and the capability is then not assumed.
func ProbeOVS(commands []string, otherConfig map[string]string, ovsVersion, dpdkVersion string) OVSCapability {
	c := OVSCapability{AsyncSupportKey: otherConfig[VhostAsyncSupportKey]}
	build := "ovs-vswitchd " + shownVersion(ovsVersion)
	if dpdkVersion == "" {
		build += " without DPDK"
	} else {
		build += " with " + shownDPDKVersion(dpdkVersion)
	}
	switch {
	case len(commands) == 0:
		c.Reason = "the appctl commands of " + build + " are unknown (list-commands could not be read), so vhost async DMA support cannot be confirmed; the DSA work queues are prepared but unused (fix: make ovs-vswitchd's unixctl socket reachable, then look again)"
	case slices.Contains(commands, VhostAsyncThreshCommand):
		c.VhostAsync = true
		c.ThreshCommand = VhostAsyncThreshCommand
		c.Reason = build + " has vhost async DMA support (it offers " + VhostAsyncThreshCommand + ")"
		if !isTrue(c.AsyncSupportKey) {
			c.Reason += "; it stays off until other_config:" + VhostAsyncSupportKey + "=true is set and ovs-vswitchd restarts"
		}
	default:
		c.Reason = build + " has no vhost async DMA support: upstream OVS never merged it; the DSA work queues are prepared but unused (fix: " + VhostAsyncBuildHint + ")"
		if isTrue(c.AsyncSupportKey) {
			c.Reason += "; other_config:" + VhostAsyncSupportKey + "=true is set but this build ignores it"
		}
	}
	return c
}

// isTrue reads an OVSDB boolean-ish value the way OVS's smap_get_bool does: only "true".
func isTrue(v string) bool { return v == "true" }

// maxShownVersion bounds a version string quoted in a Reason.
const maxShownVersion = 40

// shownVersion renders a version from OVSDB for a message: itself when it is a short run of
// letters, digits and ".-+_~", else a placeholder (the column is not ours to trust).
func shownVersion(v string) string {
	if v == "" {
		return "(version unknown)"
	}
	if len(v) > maxShownVersion {
		return "(version unreadable)"
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".-+_~", c) >= 0) {
			return "(version unreadable)"
		}
	}
	return v
}

// shownDPDKVersion renders dpdk_version ("DPDK 22.11.1") as "DPDK 22.11.1".
func shownDPDKVersion(v string) string {
	return "DPDK " + shownVersion(strings.TrimPrefix(v, "DPDK "))
}

// AsyncMode says what the plugin does when ovs-vswitchd cannot use DMA for vhost copies.
type AsyncMode string

// The modes of ovs.asyncMode.
const (
	// AsyncOff: the work queues are prepared, OVS is not asked to use them, nothing is
	// reported about OVS.
	AsyncOff AsyncMode = "off"
	// AsyncAuto (the default): use vhost async when the build has it, else warn
	// (CodeOVSNoVhostAsync) and leave the work queues prepared but unused.
	AsyncAuto AsyncMode = "auto"
	// AsyncRequire: a build without vhost async is an error (CodeOVSNoVhostAsync).
	AsyncRequire AsyncMode = "require"
)

// Check turns the capability into mode's verdict: nothing for a capable build or mode off; a
// CodeOVSNoVhostAsync *Warning in mode auto or "" (the default), a CodeOVSNoVhostAsync *Error in mode
// require, each with c.Reason as its message; an unknown mode is a CodeInvalidRequest *Error
// on field ovs.asyncMode.
func (c OVSCapability) Check(mode AsyncMode) (*Warning, error) {
	switch mode {
	case AsyncOff:
		return nil, nil
	case "", AsyncAuto:
		if c.VhostAsync {
			return nil, nil
		}
		return &Warning{Code: CodeOVSNoVhostAsync, Object: "ovs-vswitchd", Message: c.Reason}, nil
	case AsyncRequire:
		if c.VhostAsync {
			return nil, nil
		}
		return nil, Errorf(CodeOVSNoVhostAsync, "ovs-vswitchd", nil, "ovs.asyncMode is require, but %s", c.Reason)
	}
	e := Errorf(CodeInvalidRequest, "ovs.asyncMode", nil, "unknown mode %.20q (want off, auto or require)", string(mode))
	e.Field = "ovs.asyncMode"
	return nil, e
}

// Bounds of ParseVhostAsyncCoverage.
const (
	// MaxCoverageText bounds the coverage/show text, in bytes.
	MaxCoverageText = 1 << 20
	// MaxCoverageLines bounds its lines (OVS 3.1 has about 250 counters).
	MaxCoverageLines = 8192
	// maxCounterName bounds a counter's name.
	maxCounterName = 128
)

// VhostAsyncCoverage is what coverage/show says about vhost async copies.
type VhostAsyncCoverage struct {
	// Counters holds every vhost_async_* counter coverage/show lists, with its total.
	// coverage/show lists only counters that were hit, so an absent counter is zero.
	Counters map[string]uint64
	// Active is true when a vhost_async_* counter is nonzero: DMA copies happened.
	Active bool
}

// ParseVhostAsyncCoverage reads the text of `ovs-appctl coverage/show` ("Event coverage, …"
// and then one line a counter: name, three rates, "total: N") and returns the vhost_async_*
// counters. Other lines ("N events never hit") are ignored; a counter line whose total is not
// a number, or a vhost_async_* counter listed twice, is an error naming the line. Text over
// MaxCoverageText bytes or MaxCoverageLines lines, or without the "Event coverage" heading,
// is refused.
func ParseVhostAsyncCoverage(text string) (VhostAsyncCoverage, error) {
	cov := VhostAsyncCoverage{Counters: map[string]uint64{}}
	if len(text) > MaxCoverageText {
		return cov, fmt.Errorf("coverage/show: %d bytes (at most %d)", len(text), MaxCoverageText)
	}
	if !strings.HasPrefix(text, "Event coverage") {
		return cov, fmt.Errorf("coverage/show: the reply does not start with %q: %.60q", "Event coverage", text)
	}
	if n := strings.Count(text, "\n"); n > MaxCoverageLines {
		return cov, fmt.Errorf("coverage/show: %d lines (at most %d)", n, MaxCoverageLines)
	}
	for n, line := range strings.Split(text, "\n") {
		if n == 0 {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || f[len(f)-2] != "total:" {
			continue
		}
		name := f[0]
		if !strings.HasPrefix(name, VhostAsyncCounterPrefix) {
			continue
		}
		if len(name) > maxCounterName {
			return cov, fmt.Errorf("coverage/show: line %d: counter name of %d bytes (at most %d)", n+1, len(name), maxCounterName)
		}
		total, err := strconv.ParseUint(f[len(f)-1], 10, 64)
		if err != nil {
			return cov, fmt.Errorf("coverage/show: line %d: counter %.60q: total %.30q is not a number", n+1, name, f[len(f)-1])
		}
		if _, dup := cov.Counters[name]; dup {
			return cov, fmt.Errorf("coverage/show: line %d: counter %.60q is listed twice", n+1, name)
		}
		cov.Counters[name] = total
		if total > 0 {
			cov.Active = true
		}
	}
	return cov, nil
}
