package stripeplugin

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/stripe/engine"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/load"
	"github.com/ovsplane/ovsplane/stripe/policy"
	"github.com/ovsplane/ovsplane/stripe/toeplitz"
)

// Bounds and defaults of a stripe job's configuration.
const (
	// MaxLinks bounds a job's links.
	MaxLinks = 16
	// MaxPeers bounds a job's peers; the metrics bound (limits.MaxMetricsPerSample) may allow
	// fewer for many links (see Config.check).
	MaxPeers = 16
	// MaxCapacityMbit bounds a link's capacity: 1 Tbit/s, the engine's bound.
	MaxCapacityMbit = engine.MaxVmax * 8 / 1e6
	// DefaultCapacityMbit is a link's capacity when the configuration gives none.
	DefaultCapacityMbit = 1000
	// DefaultDelta is the seed policy's balance-degree threshold δ.
	DefaultDelta = 0.1
	// MaxConfigBytes bounds a job's configuration, as the daemon does.
	MaxConfigBytes = limits.MaxJobConfigBytes
)

// reNetns is a named network namespace (a file under /run/netns).
var reNetns = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// LinkConfig is one link of a job: a kernel NIC towards the peers.
type LinkConfig struct {
	// Interface is the NIC's name in the job's namespace.
	Interface string `json:"interface"`
	// CapacityMbit is the link's capacity in Mbit/s (Vmax of the load model and, with Pace, the
	// pacing rate; the weights of the weighted policy); 0 means DefaultCapacityMbit.
	CapacityMbit float64 `json:"capacity_mbit,omitempty"`
	// Lane is, in mode ovs-dpdk, the lane bound to the NIC Interface (an internal port of
	// Config.Bridge, made by a port of type stripe-lanes); the engine opens the lane.
	Lane string `json:"lane,omitempty"`
	// PaceMbit paces the link to this rate in Mbit/s (0: no pacing in kernel mode, CapacityMbit
	// in ovs-dpdk mode, where nothing gives the engine backpressure).
	PaceMbit float64 `json:"pace_mbit,omitempty"`
}

// PeerConfig is one peer node of a job.
type PeerConfig struct {
	// Node is the peer's node id, ≥ 1 and not the job's own.
	Node uint32 `json:"node"`
	// Transparent, when set, runs the transparent mode towards the peer: a tun device whose
	// IP packets the peer's engine carries (transparent.go).
	Transparent *TransparentConfig `json:"transparent,omitempty"`
}

// Config is a stripe job's configuration, the JSON object of api.Job.Config.
type Config struct {
	// Node is this node's id, ≥ 1.
	Node uint32 `json:"node"`
	// Netns is the named network namespace (under /run/netns) holding the links (the lanes in
	// ovs-dpdk mode: ovs-vswitchd's namespace); "" is the plugin's own.
	Netns string `json:"netns,omitempty"`
	// Mode is the link mode: kernel ("" too) or ovs-dpdk (ovsmode.go).
	Mode string `json:"mode,omitempty"`
	// Bridge is, in ovs-dpdk mode, the OVS bridge holding the NICs and the lanes.
	Bridge string `json:"bridge,omitempty"`
	// LaneKind is, in ovs-dpdk mode, what the lanes are: internal ("" too) or veth (ovsmode.go).
	LaneKind string `json:"lane_kind,omitempty"`
	// Links are the kernel NICs the stripe uses, 1..MaxLinks, each named once.
	Links []LinkConfig `json:"links"`
	// Peers are the nodes reached over the links, 1..MaxPeers; the job runs one engine per peer.
	Peers []PeerConfig `json:"peers"`
	// Policy is the send policy: seed (default), round-robin, hash or weighted.
	Policy string `json:"policy,omitempty"`
	// PeriodMillis is T, the sampling period of the link counters (0: the engine's 20 ms).
	PeriodMillis int `json:"period_ms,omitempty"`
	// Delta is the seed policy's balance-degree threshold δ, 0..1 (absent: DefaultDelta).
	Delta *float64 `json:"delta,omitempty"`
	// Smoothing is the load EWMA's factor r, 0 < r ≤ 1 (absent: 0.8).
	Smoothing *float64 `json:"smoothing,omitempty"`
	// ToeplitzKey is the hash key in hex, 40..256 bytes ("": the Microsoft RSS key).
	ToeplitzKey string `json:"toeplitz_key,omitempty"`
	// Pace paces every link to its capacity.
	Pace bool `json:"pace,omitempty"`
	// RxRing receives through TPACKET_V3 rings instead of one recvfrom per frame.
	RxRing bool `json:"rx_ring,omitempty"`
	// Endpoint says where the job serves applications (stripe/endpoint).
	Endpoint EndpointConfig `json:"endpoint,omitzero"`
}

// configSchema is the JSON schema of Config (the stripe job type's options).
const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "stripe job",
  "type": "object",
  "additionalProperties": false,
  "required": ["node", "links", "peers"],
  "properties": {
    "node": {"type": "integer", "minimum": 1, "maximum": 4294967295, "description": "this node's id"},
    "netns": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", "description": "named network namespace holding the links (ovs-dpdk: the lanes); absent: the plugin's own"},
    "mode": {"enum": ["kernel", "ovs-dpdk"], "description": "link mode: kernel NICs (default) or NICs of ovs-vswitchd reached through lanes"},
    "bridge": {"type": "string", "minLength": 1, "maxLength": 15, "description": "ovs-dpdk: the bridge holding the NICs and the lanes"},
    "lane_kind": {"enum": ["internal", "veth"], "description": "ovs-dpdk: internal (default) lanes are opened by name; veth lanes (stripe-lanes kind dpdk or system) through their engine end, the lane's name plus e"},
    "links": {"type": "array", "minItems": 1, "maxItems": 16, "items": {
      "type": "object", "additionalProperties": false, "required": ["interface"],
      "properties": {
        "interface": {"type": "string", "minLength": 1, "maxLength": 15, "description": "kernel NIC name"},
        "capacity_mbit": {"type": "number", "minimum": 0, "maximum": 1000000, "description": "capacity in Mbit/s (0 or absent: 1000)"},
        "lane": {"type": "string", "minLength": 1, "maxLength": 15, "description": "ovs-dpdk: the lane (internal port) bound to this NIC"},
        "pace_mbit": {"type": "number", "minimum": 0, "maximum": 1000000, "description": "pace the link to this rate (absent: none in kernel mode, capacity_mbit in ovs-dpdk)"}
      }}},
    "peers": {"type": "array", "minItems": 1, "maxItems": 16, "items": {
      "type": "object", "additionalProperties": false, "required": ["node"],
      "properties": {"node": {"type": "integer", "minimum": 1, "maximum": 4294967295},
        "transparent": {"type": "object", "additionalProperties": false, "required": ["device", "address"],
          "description": "transparent mode: a tun device in the job's namespace whose IP packets this peer's engine carries",
          "properties": {
            "device": {"type": "string", "minLength": 1, "maxLength": 15, "description": "the tun device's name, created by the job"},
            "address": {"type": "string", "maxLength": 18, "description": "the device's IPv4 address with its prefix (10.99.0.1/30); the prefix is routed through the device"},
            "mtu": {"type": "integer", "minimum": 0, "maximum": 65535, "description": "the device's MTU, 576 up to the engine's frame payload (0 or absent: that payload)"},
            "offloads": {"type": "boolean", "description": "segmentation offloads (IFF_VNET_HDR, TSO/USO; default true)"},
            "queue_len": {"type": "integer", "minimum": 0, "maximum": 1048576, "description": "the device's transmit queue in packets (0 or absent: 4096)"}
          }}}}},
    "policy": {"enum": ["seed", "round-robin", "hash", "weighted"], "description": "send policy (default seed)"},
    "period_ms": {"type": "integer", "minimum": 1, "maximum": 60000, "description": "T, the load sampling period (default 20)"},
    "delta": {"type": "number", "minimum": 0, "maximum": 1, "description": "δ, the seed policy's balance-degree threshold (default 0.1)"},
    "smoothing": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "r, the load EWMA factor (default 0.8)"},
    "toeplitz_key": {"type": "string", "pattern": "^([0-9a-fA-F]{2}){40,256}$", "description": "Toeplitz hash key in hex (default: the Microsoft RSS key)"},
    "pace": {"type": "boolean", "description": "pace every link to its capacity"},
    "rx_ring": {"type": "boolean", "description": "receive through TPACKET_V3 rings"},
    "endpoint": {"type": "object", "additionalProperties": false, "description": "where applications reach the job (stripe/endpoint)",
      "properties": {
        "unix": {"type": "string", "maxLength": 107, "description": "unix socket path, absolute (default: <plugin data dir>/<job>.sock)"},
        "tcp": {"type": "string", "maxLength": 64, "description": "TCP listen address IP:port in the job's namespace, loopback unless remote"},
        "udp": {"type": "string", "maxLength": 64, "description": "UDP listen address IP:port in the job's namespace, loopback unless remote"},
        "remote": {"type": "boolean", "description": "allow TCP/UDP addresses that are not loopback"},
        "max_apps": {"type": "integer", "minimum": 0, "maximum": 4096, "description": "most applications registered at once (default 1024)"},
        "period_ms": {"type": "integer", "minimum": 0, "maximum": 60000, "description": "how often fair shares are recomputed (default 100)"}
      }}
  }
}`

// configDoc documents the job type for humans.
const configDoc = `A stripe job carries traffic between this node and its peers over several kernel NICs
(AF_PACKET, ethertype 0x88B5), one engine per peer (stripe/engine): node ids, links with their
capacities, peers, the send policy (seed, round-robin, hash, weighted), T (period_ms), δ (delta),
r (smoothing), an optional Toeplitz key, pacing. Discovery learns each peer's MACs on every link.
Applications reach the job on its endpoint (a unix socket, by default <plugin data dir>/<job>.sock,
and optional loopback TCP/UDP addresses): they register, send and receive in order, each paced to
its fair share Σ(Vmax − V)/APP_NB. Stats: per peer and link the bytes, EWMA loads, balance degree,
usability and kernel drops; per peer the sent and delivered bytes, retransmits, adjusts, reorder
depth, losses, resets and discovery state; per application its share, rates and drops. A peer's
transparent option makes a tun device (device, address) whose IP packets that peer's engine
carries, so ordinary TCP/UDP between the two nodes' tun addresses is striped without the
applications knowing; per device its packets, bytes and drops.`

// metricsPerLink and metricsPerPeer are the metrics a sample holds per peer link and per
// peer; metricsPerJob those of the job itself (the endpoint's included), metricsPerApp those of
// one registered application.
const (
	metricsPerLink = 12
	metricsPerPeer = 27
	metricsPerJob  = 10
	metricsPerApp  = 7
)

// metricsFixed is the size of a job's stats sample without applications, with tunnels
// transparent devices.
func metricsFixed(links, peers, tunnels int) int {
	return peers*(metricsPerPeer+links*metricsPerLink) + tunnels*metricsPerTunnel + metricsPerJob
}

// metricsOf is the size of a job's stats sample with one application: a configuration must
// leave room for it.
func metricsOf(links, peers, tunnels int) int {
	return metricsFixed(links, peers, tunnels) + metricsPerApp
}

// appsShown is how many applications a sample has room for (the first by id; the sample's
// stripe_apps says how many are registered).
func appsShown(links, peers, tunnels int) int {
	return max(0, (limits.MaxMetricsPerSample-metricsFixed(links, peers, tunnels))/metricsPerApp)
}

// tunnels counts the peers with the transparent mode.
func (c *Config) tunnels() int {
	n := 0
	for _, p := range c.Peers {
		if p.Transparent != nil {
			n++
		}
	}
	return n
}

// problem is a field-level configuration error.
func problem(field, format string, args ...any) error {
	return sdk.Invalid(api.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// ParseConfig decodes a job's configuration strictly (unknown fields, trailing data and more
// than MaxConfigBytes are refused) and checks it. Errors are InvalidArgument whose problem
// names the field ("config.links[1].interface") and says what to change.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if len(data) > MaxConfigBytes {
		return c, problem("config", "%d bytes, more than %d: a stripe job's configuration is a small JSON object", len(data), MaxConfigBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return c, problem("config", "empty: give at least node, links and peers, e.g. {\"node\": 1, \"links\": [{\"interface\": \"eth1\"}], \"peers\": [{\"node\": 2}]}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, decodeProblem(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return c, problem("config", "trailing data after the JSON object: give one object")
	}
	return c, c.check()
}

// decodeProblem turns a JSON decoding error of data into a problem naming the field.
func decodeProblem(data []byte, err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := "config"
		if typeErr.Field != "" {
			field += "." + typeErr.Field
		}
		want := "a number"
		switch typeErr.Type.Kind().String() {
		case "string":
			want = "a string"
		case "bool":
			want = "true or false"
		case "slice":
			want = "a list"
		case "struct":
			want = "an object"
		}
		return problem(field, "is %s: want %s (see the stripe job's schema)", typeErr.Value, want)
	case errors.As(err, &syntaxErr):
		return problem("config", "not JSON: %v", syntaxErr)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		if f, ok := nestedUnknown(data); ok {
			hint := "a link takes interface, capacity_mbit, lane and pace_mbit, a peer takes node and transparent (device, address, mtu, offloads, queue_len)"
			switch {
			case f == "config.endpoint":
				hint = "the endpoint takes unix, tcp, udp, remote, max_apps and period_ms"
			case strings.HasSuffix(f, ".transparent"):
				hint = "transparent takes device, address, mtu, offloads and queue_len"
			}
			return problem(f+"."+name, "unknown field: %s", hint)
		}
		return problem("config."+name, "unknown field: the stripe job takes node, netns, mode, bridge, links, peers, policy, period_ms, delta, smoothing, toeplitz_key, pace, rx_ring and endpoint")
	}
	return problem("config", "%v", err)
}

// nestedUnknown finds the link or peer with an unknown field, which encoding/json does not
// name: "config.links[1]".
func nestedUnknown(data []byte) (string, bool) {
	var lists struct {
		Links    []json.RawMessage `json:"links"`
		Peers    []json.RawMessage `json:"peers"`
		Endpoint json.RawMessage   `json:"endpoint"`
	}
	if json.Unmarshal(data, &lists) != nil {
		return "", false
	}
	strict := func(raw json.RawMessage, dst any) bool {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		return dec.Decode(dst) != nil
	}
	for i, raw := range lists.Links {
		if strict(raw, &LinkConfig{}) {
			return fmt.Sprintf("config.links[%d]", i), true
		}
	}
	for i, raw := range lists.Peers {
		var peer struct {
			Transparent json.RawMessage `json:"transparent"`
		}
		if json.Unmarshal(raw, &peer) == nil && len(peer.Transparent) > 0 && strict(peer.Transparent, &TransparentConfig{}) {
			return fmt.Sprintf("config.peers[%d].transparent", i), true
		}
		if strict(raw, &PeerConfig{}) {
			return fmt.Sprintf("config.peers[%d]", i), true
		}
	}
	if len(lists.Endpoint) > 0 && strict(lists.Endpoint, &EndpointConfig{}) {
		return "config.endpoint", true
	}
	return "", false
}

// check validates c; it changes nothing (defaults are applied by the accessors).
func (c *Config) check() error {
	if c.Node == 0 {
		return problem("config.node", "missing or 0: give this node's id, 1 to 4294967295, unique among the nodes the links join")
	}
	if c.Netns != "" && !reNetns.MatchString(c.Netns) {
		return problem("config.netns", "%q: want a namespace name as `ip netns` lists it (a letter or digit, then up to 63 letters, digits, '_', '.' or '-')", clip(c.Netns))
	}
	if len(c.Links) < 1 || len(c.Links) > MaxLinks {
		return problem("config.links", "%d links: give 1 to %d kernel NICs", len(c.Links), MaxLinks)
	}
	seen := map[string]int{}
	for i, l := range c.Links {
		f := fmt.Sprintf("config.links[%d]", i)
		if err := link.CheckInterfaceName(l.Interface); err != nil {
			return problem(f+".interface", "%q: %v", clip(l.Interface), err)
		}
		if j, dup := seen[l.Interface]; dup {
			return problem(f+".interface", "%s is also links[%d]: name each NIC once", l.Interface, j)
		}
		seen[l.Interface] = i
		if l.CapacityMbit < 0 || l.CapacityMbit > MaxCapacityMbit || math.IsNaN(l.CapacityMbit) {
			return problem(f+".capacity_mbit", "%v: want more than 0 and at most %v Mbit/s (or leave it out for %d)", l.CapacityMbit, MaxCapacityMbit, DefaultCapacityMbit)
		}
	}
	if len(c.Peers) < 1 || len(c.Peers) > MaxPeers {
		return problem("config.peers", "%d peers: give 1 to %d peer node ids", len(c.Peers), MaxPeers)
	}
	if n := metricsOf(len(c.Links), len(c.Peers), c.tunnels()); n > limits.MaxMetricsPerSample {
		return problem("config.peers", "%d peers over %d links make %d metrics a sample, more than %d (limits.MaxMetricsPerSample): split the peers over several jobs", len(c.Peers), len(c.Links), n, limits.MaxMetricsPerSample)
	}
	peers := map[uint32]int{}
	for i, p := range c.Peers {
		f := fmt.Sprintf("config.peers[%d].node", i)
		switch j, dup := peers[p.Node]; {
		case p.Node == 0:
			return problem(f, "missing or 0: give the peer's node id, 1 to 4294967295")
		case p.Node == c.Node:
			return problem(f, "%d is this node's own id: give another node's id", p.Node)
		case dup:
			return problem(f, "%d is also peers[%d]: name each peer once", p.Node, j)
		}
		peers[p.Node] = i
	}
	if err := c.checkTransparent(seen); err != nil {
		return err
	}
	if !slices.Contains([]string{"", string(policy.KindSeed), string(policy.KindRoundRobin), string(policy.KindHash), string(policy.KindWeighted)}, c.Policy) {
		return problem("config.policy", "%q: want seed, round-robin, hash or weighted", clip(c.Policy))
	}
	if d := time.Duration(c.PeriodMillis) * time.Millisecond; c.PeriodMillis < 0 || c.PeriodMillis > int(engine.MaxInterval/time.Millisecond) ||
		(c.PeriodMillis > 0 && d < engine.MinInterval) {
		return problem("config.period_ms", "%d: want 1 to %d milliseconds (or leave it out for %d)", c.PeriodMillis, engine.MaxInterval/time.Millisecond, engine.DefaultPeriod/time.Millisecond)
	}
	if c.Delta != nil && !(*c.Delta >= 0 && *c.Delta <= 1) {
		return problem("config.delta", "%v: want 0 to 1 (load-rate units: 0.1 is ten points of capacity above the other links' mean)", *c.Delta)
	}
	if c.Smoothing != nil && !(*c.Smoothing > 0 && *c.Smoothing <= 1) {
		return problem("config.smoothing", "%v: want more than 0 and at most 1 (or leave it out for %v)", *c.Smoothing, load.DefaultSmoothing)
	}
	if _, err := c.hasher(); err != nil {
		return err
	}
	if err := c.Endpoint.check(); err != nil {
		return err
	}
	return c.checkMode()
}

// hasher returns the Toeplitz hasher of ToeplitzKey; nil for the default key.
func (c *Config) hasher() (*toeplitz.Hasher, error) {
	if c.ToeplitzKey == "" {
		return nil, nil
	}
	if len(c.ToeplitzKey) > 2*toeplitz.MaxKeyLen {
		return nil, problem("config.toeplitz_key", "%d hex digits: want %d to %d bytes (%d to %d hex digits)", len(c.ToeplitzKey), toeplitz.MinKeyLen, toeplitz.MaxKeyLen, 2*toeplitz.MinKeyLen, 2*toeplitz.MaxKeyLen)
	}
	key, err := hex.DecodeString(c.ToeplitzKey)
	if err != nil {
		return nil, problem("config.toeplitz_key", "not hex (%v): give the key as hex digits, two per byte, without separators", err)
	}
	h, err := toeplitz.New(key)
	if err != nil {
		return nil, problem("config.toeplitz_key", "%v", err)
	}
	return h, nil
}

// capacityMbit is link i's capacity in Mbit/s, its default applied.
func (c *Config) capacityMbit(i int) float64 {
	if v := c.Links[i].CapacityMbit; v > 0 {
		return v
	}
	return DefaultCapacityMbit
}

// engineConfig is the engine configuration towards peer, without its links.
func (c *Config) engineConfig(peer uint32) (engine.Config, error) {
	h, err := c.hasher()
	if err != nil {
		return engine.Config{}, err
	}
	kind := policy.Kind(c.Policy)
	if kind == "" {
		kind = policy.KindSeed
	}
	delta := DefaultDelta
	if c.Delta != nil {
		delta = *c.Delta
	}
	ec := engine.Config{Node: c.Node, Peer: peer, Pace: c.Pace,
		Period: time.Duration(c.PeriodMillis) * time.Millisecond,
		Policy: policy.Config{Kind: kind, Hasher: h, Delta: delta}}
	if c.Smoothing != nil {
		ec.Smoothing = *c.Smoothing
	}
	for i := range c.Links {
		mbit := c.capacityMbit(i)
		ec.Vmax = append(ec.Vmax, mbit*1e6/8)
		ec.Policy.Capacities = append(ec.Policy.Capacities, max(1, uint64(math.Round(mbit))))
	}
	return ec, nil
}

// clip shortens a value quoted in an error.
func clip(s string) string {
	const n = 64
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Describe is the configuration with its defaults applied, for humans, one setting a line.
func (c *Config) Describe() string {
	var b strings.Builder
	ec, err := c.engineConfig(c.peerOrZero())
	if err != nil {
		return "invalid: " + err.Error() + "\n"
	}
	fmt.Fprintf(&b, "node %d\n", c.Node)
	if c.Netns != "" {
		fmt.Fprintf(&b, "netns %s\n", c.Netns)
	}
	for i, l := range c.Links {
		fmt.Fprintf(&b, "link %d: %s, %v Mbit/s\n", i, l.Interface, c.capacityMbit(i))
	}
	for _, p := range c.Peers {
		fmt.Fprintf(&b, "peer %d%s\n", p.Node, p.Transparent.describe())
	}
	period := ec.Period
	if period == 0 {
		period = engine.DefaultPeriod
	}
	r := ec.Smoothing
	if r == 0 {
		r = load.DefaultSmoothing
	}
	key := "Microsoft RSS key"
	if c.ToeplitzKey != "" {
		key = fmt.Sprintf("%d-byte key", len(c.ToeplitzKey)/2)
	}
	b.WriteString(c.describeMode())
	fmt.Fprintf(&b, "policy %s, T %v, δ %v, r %v, toeplitz %s, pace %t, rx ring %t\n",
		ec.Policy.Kind, period, ec.Policy.Delta, r, key, c.Pace, c.RxRing)
	unix := c.Endpoint.Unix
	if unix == "" {
		unix = "<plugin data dir>/<job>.sock"
	}
	fmt.Fprintf(&b, "applications: unix %s", unix)
	if c.Endpoint.TCP != "" {
		fmt.Fprintf(&b, ", tcp %s", c.Endpoint.TCP)
	}
	if c.Endpoint.UDP != "" {
		fmt.Fprintf(&b, ", udp %s", c.Endpoint.UDP)
	}
	maxApps := c.Endpoint.MaxApps
	if maxApps == 0 {
		maxApps = endpoint.DefaultMaxApps
	}
	fmt.Fprintf(&b, "; at most %d, shares every %v\n", maxApps, c.Endpoint.period())
	return b.String()
}

// peerOrZero is the first peer's id (0 without peers).
func (c *Config) peerOrZero() uint32 {
	if len(c.Peers) == 0 {
		return 0
	}
	return c.Peers[0].Node
}
