package overlayplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/overlay/ovsinstall"
	"github.com/ovsplane/ovsplane/overlay/probe"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Bounds and defaults of the jobs' configurations.
const (
	// MaxConfigBytes bounds a job's configuration, as the daemon does.
	MaxConfigBytes = limits.MaxJobConfigBytes
	// MaxPrefixesFileBytes bounds a prefixes_file.
	MaxPrefixesFileBytes = 1 << 20
	// MaxPrefixNodes bounds the nodes of the prefix directory.
	MaxPrefixNodes = fabric.MaxNodes
	// MaxPrefixesPerNode bounds one node's overlay prefixes.
	MaxPrefixesPerNode = 16
	// MaxPrefixes bounds all prefixes together (each costs up to 4 flows on a super node).
	MaxPrefixes = 2048
	// DefaultAgentPeriod is the agent's polling period when period_ms is 0.
	DefaultAgentPeriod = time.Second
	// DefaultFlowRefresh is how often the daemon is asked to call Flows again (the only way
	// the contract has to pick up a new route version: see docs/overlay.md).
	DefaultFlowRefresh = 500 * time.Millisecond
	// MinFlowRefresh and MaxFlowRefresh bound flow_refresh_ms.
	MinFlowRefresh = 100 * time.Millisecond
	MaxFlowRefresh = 60 * time.Second
	// DefaultLeaseTTL is the controller's lease time when lease_ttl_ms is 0.
	DefaultLeaseTTL = 5 * time.Second
)

// NodeConfig is the node an agent job registers.
type NodeConfig struct {
	// Name is the node's name in the fabric (1–64 of A-Z a-z 0-9 . _ -).
	Name string `json:"name"`
	// Kind is "super" (relays) or "ordinary" (never relays).
	Kind string `json:"kind"`
	// Carriers name the carrier networks the node is on (links are probed between nodes
	// sharing a carrier).
	Carriers []string `json:"carriers,omitempty"`
	// Underlay are the node's underlay addresses, "IP" or "IP:port" (the port: where its
	// probe responder listens, when not the fabric-wide probe port).
	Underlay []string `json:"underlay"`
}

// ProbeConfig configures an agent's link probes (overlay/probe).
type ProbeConfig struct {
	// Disabled turns probing (and the responder) off.
	Disabled bool `json:"disabled,omitempty"`
	// Port is the UDP port of every node's probe responder (0: probe.DefaultPort).
	Port uint16 `json:"port,omitempty"`
	// IntervalMillis is the time between probes of a link (0: probe's default).
	IntervalMillis int `json:"interval_ms,omitempty"`
	// Window is the number of probes per report (0: probe's default).
	Window int `json:"window,omitempty"`
	// MaxBandwidthMbit caps the bandwidth estimate (0: probe's default).
	MaxBandwidthMbit int64 `json:"max_bandwidth_mbit,omitempty"`
}

// AgentConfig is an "overlay-agent" job's configuration (JSON).
type AgentConfig struct {
	// Node is this site's node.
	Node NodeConfig `json:"node"`
	// FabricRemotes are the fabric database cluster's members (unix:PATH, tcp:HOST:PORT or
	// ssl:HOST:PORT), 1–7.
	FabricRemotes []string `json:"fabric_remotes"`
	// Bridge is the bridge the forwarding flows go on (one agent job per bridge).
	Bridge string `json:"bridge"`
	// TunnelPort is the flow-based tunnel port's interface on Bridge (a port of type
	// overlay-tunnel of this plugin, or a vxlan/geneve/gre port with remote_ip=flow and
	// key=flow of the daemon's configuration).
	TunnelPort string `json:"tunnel_port"`
	// VNI is the overlay's tunnel key (tun_id), 0–16777215; every node must agree.
	VNI uint32 `json:"vni,omitempty"`
	// Prefixes maps node names to their overlay prefixes (this node's included): the
	// directory of what each node's site holds. Give it here or in PrefixesFile.
	Prefixes map[string][]string `json:"prefixes,omitempty"`
	// PrefixesFile names a JSON file holding the Prefixes object (for directories larger
	// than a job's configuration may be), at most MaxPrefixesFileBytes.
	PrefixesFile string `json:"prefixes_file,omitempty"`
	// UnderlayVia pins the underlay address used to reach a next-hop node, overriding the
	// longest-common-prefix choice (ovsinstall.SelectUnderlay).
	UnderlayVia map[string]string `json:"underlay_via,omitempty"`
	// PeriodMillis is the agent's polling period (0: 1000).
	PeriodMillis int `json:"period_ms,omitempty"`
	// FlowRefreshMillis is the FlowSet.RefreshMillis the plugin answers with (0: 500).
	FlowRefreshMillis int `json:"flow_refresh_ms,omitempty"`
	// Probe configures the link probes.
	Probe ProbeConfig `json:"probe,omitempty"`
}

// ControllerConfig is an "overlay-controller" job's configuration (JSON).
type ControllerConfig struct {
	// Holder names this controller in the fabric's lease (the node-name rules).
	Holder string `json:"holder"`
	// FabricRemotes are the fabric database cluster's members, as for the agent.
	FabricRemotes []string `json:"fabric_remotes"`
	// LeaseTTLMillis is the lease time (0: 5000).
	LeaseTTLMillis int `json:"lease_ttl_ms,omitempty"`
	// PeriodMillis is the time between rounds (0: lease time / 5).
	PeriodMillis int `json:"period_ms,omitempty"`
	// CostHysteresisPct is controller.Config.CostHysteresis in percent: a cost must move by
	// more than this share of its published value to make a new version on its own (0: 20;
	// 0.1 to 100).
	CostHysteresisPct float64 `json:"cost_hysteresis_pct,omitempty"`
}

// agentSettings is an AgentConfig checked and converted to typed values.
type agentSettings struct {
	cfg         AgentConfig
	spec        fabric.NodeSpec
	local       []netip.Addr
	own         []netip.Prefix
	prefixes    map[string][]netip.Prefix // other nodes
	via         map[string]netip.Addr
	period      time.Duration
	flowRefresh time.Duration
	probe       probe.Config // Self, Local filled; Reporter etc. by the job
}

// problem is a field-level configuration error.
func problem(field, format string, args ...any) error {
	return sdk.Invalid(api.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// decodeStrict decodes one JSON object into dst, refusing unknown fields and trailing data.
func decodeStrict(data []byte, dst any, what string) error {
	if len(data) > MaxConfigBytes {
		return problem("config", "%d bytes, more than %d: give a prefixes_file for large prefix directories", len(data), MaxConfigBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return problem("config", "empty: an %s job needs a configuration (see docs/overlay.md)", what)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return problem("config."+typeErr.Field, "is %s: wrong type (see the %s job's schema)", typeErr.Value, what)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return problem("config", "unknown field %s (see the %s job's schema in docs/overlay.md)", name, what)
		}
		return problem("config", "not a valid %s configuration: %v", what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem("config", "trailing data after the JSON object: give one object")
	}
	return nil
}

// checkRemotes validates the fabric remotes.
func checkRemotes(remotes []string) error {
	if len(remotes) == 0 || len(remotes) > fabric.MaxEndpoints {
		return problem("config.fabric_remotes", "%d remotes: give the 1 to %d members of the fabric database cluster", len(remotes), fabric.MaxEndpoints)
	}
	for i, r := range remotes {
		scheme, rest, ok := strings.Cut(r, ":")
		if !ok || rest == "" || len(r) > 256 || (scheme != "unix" && scheme != "tcp" && scheme != "ssl") {
			return problem(fmt.Sprintf("config.fabric_remotes[%d]", i), "%q: use unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT", clip(r))
		}
	}
	return nil
}

// reIfName checks an OVS port or bridge name (what the daemon accepts is stricter; this keeps
// the name printable and short).
func checkOVSName(field, s string) error {
	if s == "" || len(s) > 64 {
		return problem(field, "%q: give 1 to 64 bytes", clip(s))
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return problem(field, "%q: use letters, digits, '.', '_' and '-' only", clip(s))
		}
	}
	return nil
}

// ParseAgentConfig decodes and checks an overlay-agent job's configuration; errors are
// InvalidArgument naming the field. A prefixes_file is read (bounded) here.
func ParseAgentConfig(data []byte) (AgentConfig, error) {
	s, err := parseAgent(data)
	return s.cfg, err
}

func parseAgent(data []byte) (agentSettings, error) {
	var s agentSettings
	c := &s.cfg
	if err := decodeStrict(data, c, "overlay-agent"); err != nil {
		return s, err
	}
	s.spec = fabric.NodeSpec{Name: c.Node.Name, Kind: fabric.Kind(c.Node.Kind), Carriers: c.Node.Carriers, Underlay: c.Node.Underlay}
	if err := s.spec.Validate(); err != nil {
		return s, problem("config.node", "%v", err)
	}
	if len(c.Node.Underlay) == 0 {
		return s, problem("config.node.underlay", "empty: give this node's underlay addresses (the tunnel endpoints)")
	}
	for _, u := range c.Node.Underlay {
		a, _, err := ovsinstall.ParseUnderlay(u)
		if err != nil {
			return s, problem("config.node.underlay", "%v", err)
		}
		s.local = append(s.local, a)
	}
	if err := checkRemotes(c.FabricRemotes); err != nil {
		return s, err
	}
	if err := checkOVSName("config.bridge", c.Bridge); err != nil {
		return s, err
	}
	if err := checkOVSName("config.tunnel_port", c.TunnelPort); err != nil {
		return s, err
	}
	if c.VNI > ovsinstall.MaxVNI {
		return s, problem("config.vni", "%d: give 0 to %d", c.VNI, ovsinstall.MaxVNI)
	}
	raw := c.Prefixes
	switch {
	case c.PrefixesFile != "" && len(c.Prefixes) > 0:
		return s, problem("config.prefixes_file", "give prefixes or prefixes_file, not both")
	case c.PrefixesFile != "":
		var err error
		if raw, err = readPrefixesFile(c.PrefixesFile); err != nil {
			return s, err
		}
	}
	own, others, err := checkPrefixes(raw, c.Node.Name)
	if err != nil {
		return s, err
	}
	s.own, s.prefixes = own, others
	s.via = map[string]netip.Addr{}
	for n, a := range c.UnderlayVia {
		if err := ovsinstall.CheckName(n); err != nil {
			return s, problem("config.underlay_via", "%v", err)
		}
		addr, err := netip.ParseAddr(a)
		if err != nil || addr.IsUnspecified() || addr.Zone() != "" {
			return s, problem("config.underlay_via."+n, "%q: give the unicast IP address to reach node %s at", clip(a), n)
		}
		s.via[n] = addr.Unmap()
	}
	if len(c.UnderlayVia) > MaxPrefixNodes {
		return s, problem("config.underlay_via", "%d entries: at most %d", len(c.UnderlayVia), MaxPrefixNodes)
	}
	s.period = DefaultAgentPeriod
	if c.PeriodMillis != 0 {
		s.period = time.Duration(c.PeriodMillis) * time.Millisecond
		if c.PeriodMillis < 10 || c.PeriodMillis > 600_000 {
			return s, problem("config.period_ms", "%d: give 10 to 600000 milliseconds (or leave it out for 1000)", c.PeriodMillis)
		}
	}
	s.flowRefresh = DefaultFlowRefresh
	if c.FlowRefreshMillis != 0 {
		// The raw integer is checked before it is multiplied: a huge value would wrap.
		if int64(c.FlowRefreshMillis) < MinFlowRefresh.Milliseconds() || int64(c.FlowRefreshMillis) > MaxFlowRefresh.Milliseconds() {
			return s, problem("config.flow_refresh_ms", "%d: give %d to %d milliseconds (or leave it out for %d)", c.FlowRefreshMillis,
				MinFlowRefresh.Milliseconds(), MaxFlowRefresh.Milliseconds(), DefaultFlowRefresh.Milliseconds())
		}
		s.flowRefresh = time.Duration(c.FlowRefreshMillis) * time.Millisecond
	}
	if c.Probe.IntervalMillis != 0 && (int64(c.Probe.IntervalMillis) < probe.MinInterval.Milliseconds() || int64(c.Probe.IntervalMillis) > probe.MaxInterval.Milliseconds()) {
		return s, problem("config.probe.interval_ms", "%d: give %d to %d milliseconds (or leave it out for %d)", c.Probe.IntervalMillis,
			probe.MinInterval.Milliseconds(), probe.MaxInterval.Milliseconds(), probe.DefaultInterval.Milliseconds())
	}
	if c.Probe.MaxBandwidthMbit < 0 || c.Probe.MaxBandwidthMbit > fabric.MaxBandwidthKbps/1000 {
		return s, problem("config.probe.max_bandwidth_mbit", "%d: give 1 to %d Mbit/s (or leave it out for the probe's default)",
			c.Probe.MaxBandwidthMbit, int64(fabric.MaxBandwidthKbps/1000))
	}
	pc := probe.Config{Self: s.spec, Local: s.local, Port: c.Probe.Port,
		Interval: time.Duration(c.Probe.IntervalMillis) * time.Millisecond, Window: c.Probe.Window,
		MaxBandwidthKbps: c.Probe.MaxBandwidthMbit * 1000, Via: s.via}
	if err := pc.CheckBounds(); err != nil {
		return s, problem("config.probe", "%v", err)
	}
	s.probe = pc
	return s, nil
}

// readPrefixesFile reads a prefixes file (bounded).
func readPrefixesFile(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, problem("config.prefixes_file", "%v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPrefixesFileBytes+1))
	if err != nil {
		return nil, problem("config.prefixes_file", "read %s: %v", path, err)
	}
	if len(data) > MaxPrefixesFileBytes {
		return nil, problem("config.prefixes_file", "%s is larger than %d bytes", path, MaxPrefixesFileBytes)
	}
	var m map[string][]string
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, problem("config.prefixes_file", "%s: want a JSON object of node name → list of prefixes: %v", path, err)
	}
	return m, nil
}

// checkPrefixes validates the prefix directory: names, prefixes in canonical form (no host
// bits), bounds, no prefix given twice; it returns self's prefixes and the others'.
func checkPrefixes(raw map[string][]string, self string) ([]netip.Prefix, map[string][]netip.Prefix, error) {
	if len(raw) > MaxPrefixNodes {
		return nil, nil, problem("config.prefixes", "%d nodes: at most %d", len(raw), MaxPrefixNodes)
	}
	total := 0
	seen := map[netip.Prefix]string{}
	others := map[string][]netip.Prefix{}
	var own []netip.Prefix
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		field := "config.prefixes." + n
		if err := ovsinstall.CheckName(n); err != nil {
			return nil, nil, problem("config.prefixes", "%v", err)
		}
		list := raw[n]
		if len(list) > MaxPrefixesPerNode {
			return nil, nil, problem(field, "%d prefixes: at most %d per node", len(list), MaxPrefixesPerNode)
		}
		total += len(list)
		if total > MaxPrefixes {
			return nil, nil, problem("config.prefixes", "more than %d prefixes in all", MaxPrefixes)
		}
		for _, ps := range list {
			p, err := netip.ParsePrefix(ps)
			if err != nil {
				return nil, nil, problem(field, "%q: give a prefix such as 10.1.0.0/24 or fd00:1::/64", clip(ps))
			}
			if p.Addr().Zone() != "" || p.Addr().Is4In6() {
				return nil, nil, problem(field, "%q: give a plain IPv4 or IPv6 prefix", clip(ps))
			}
			if p.Masked() != p {
				return nil, nil, problem(field, "%q has host bits set: give %s", ps, p.Masked())
			}
			if other, dup := seen[p]; dup {
				return nil, nil, problem(field, "%s is also node %s's prefix: give each prefix to one node", p, other)
			}
			seen[p] = n
			if n == self {
				own = append(own, p)
			} else {
				others[n] = append(others[n], p)
			}
		}
	}
	return own, others, nil
}

// parseController decodes and checks an overlay-controller job's configuration.
func parseController(data []byte) (ControllerConfig, time.Duration, time.Duration, error) {
	var c ControllerConfig
	if err := decodeStrict(data, &c, "overlay-controller"); err != nil {
		return c, 0, 0, err
	}
	if err := ovsinstall.CheckName(c.Holder); err != nil {
		return c, 0, 0, problem("config.holder", "%v", err)
	}
	if err := checkRemotes(c.FabricRemotes); err != nil {
		return c, 0, 0, err
	}
	ttl := DefaultLeaseTTL
	if c.LeaseTTLMillis != 0 {
		// Raw integers are checked before they are multiplied: a huge value would wrap.
		if int64(c.LeaseTTLMillis) < fabric.MinLeaseTTL.Milliseconds() || int64(c.LeaseTTLMillis) > fabric.MaxLeaseTTL.Milliseconds() {
			return c, 0, 0, problem("config.lease_ttl_ms", "%d: give %d to %d milliseconds", c.LeaseTTLMillis,
				fabric.MinLeaseTTL.Milliseconds(), fabric.MaxLeaseTTL.Milliseconds())
		}
		ttl = time.Duration(c.LeaseTTLMillis) * time.Millisecond
	}
	if c.PeriodMillis != 0 && (c.PeriodMillis < 10 || int64(c.PeriodMillis) > (ttl/3).Milliseconds()) {
		return c, 0, 0, problem("config.period_ms", "%d: give 10 milliseconds to a third of the lease time (%v)", c.PeriodMillis, ttl/3)
	}
	if h := c.CostHysteresisPct; h != 0 && !(h >= 100*controller.MinCostHysteresis && h <= 100*controller.MaxCostHysteresis) {
		return c, 0, 0, problem("config.cost_hysteresis_pct", "%v: give %v to %v percent (or leave it out for %v)", h,
			100*controller.MinCostHysteresis, 100*controller.MaxCostHysteresis, 100*controller.DefaultCostHysteresis)
	}
	period := time.Duration(c.PeriodMillis) * time.Millisecond
	return c, ttl, period, nil
}

// clip shortens a value quoted in an error.
func clip(s string) string {
	const n = 64
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
