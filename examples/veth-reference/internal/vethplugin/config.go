package vethplugin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Config is the plugin's configuration, the JSON object the host hands to Configure (the
// `config:` of the plugin's entry in ovsplaned's configuration). Every field is optional.
type Config struct {
	// DefaultMTU is the MTU of pairs whose port has no options:mtu; 0 leaves the kernel's 1500.
	DefaultMTU int `json:"default_mtu,omitempty"`
	// CreateNetns lets options:netns name a namespace that does not exist yet: the plugin
	// creates it (and removes it with its last pair). Default true.
	CreateNetns *bool `json:"create_netns,omitempty"`
	// Offloads keeps the pairs' checksum and segmentation offloads on unless a port says
	// otherwise (options:offloads). Default false: off, which OVS's userspace datapath needs
	// for TCP; set it on the kernel datapath.
	Offloads bool `json:"offloads,omitempty"`
	// DropEthertypes are the ethertypes the flow program drops on traffic coming in from the
	// plugin's ports: names (arp, ipv4, ipv6, lldp, vlan, qinq, mpls, rarp) or "0x" and four hex
	// digits. Empty: no flows.
	DropEthertypes []string `json:"drop_ethertypes,omitempty"`
	// FlowPriority is the priority of those flows (default DefaultFlowPriority).
	FlowPriority int `json:"flow_priority,omitempty"`
	// HostNetns is the network namespace of ovs-vswitchd, where host ends are created: a path
	// (/proc/<pid>/ns/net, /run/netns/ovs) or a name under the namespace directory. Empty: the
	// plugin's own, which is ovsplaned's.
	HostNetns string `json:"host_netns,omitempty"`
	// StatsUpdateIntervalMS is contributed as Open_vSwitch other_config:stats-update-interval
	// (how often ovs-vswitchd writes Interface statistics to OVSDB, ms, at least 5000); 0
	// contributes nothing.
	StatsUpdateIntervalMS int `json:"stats_update_interval_ms,omitempty"`
}

// Defaults and limits of Config.
const (
	DefaultFlowPriority = 100
	// MinStatsUpdateIntervalMS is the smallest stats-update-interval ovs-vswitchd honours.
	MinStatsUpdateIntervalMS = 5000
)

// ethertypeNames are the names DropEthertypes accepts.
var ethertypeNames = map[string]uint16{
	"arp": 0x0806, "ipv4": 0x0800, "ip": 0x0800, "ipv6": 0x86dd, "lldp": 0x88cc,
	"vlan": 0x8100, "qinq": 0x88a8, "mpls": 0x8847, "rarp": 0x8035,
}

// createNetns returns CreateNetns with its default.
func (c Config) createNetns() bool { return c.CreateNetns == nil || *c.CreateNetns }

// flowPriority returns FlowPriority with its default.
func (c Config) flowPriority() int {
	if c.FlowPriority == 0 {
		return DefaultFlowPriority
	}
	return c.FlowPriority
}

// parseConfig decodes and validates a configuration; errors are *api.Error InvalidArgument
// with one Problem per field ("config.<field>").
func parseConfig(raw []byte) (Config, []uint16, error) {
	var c Config
	if err := sdk.DecodeConfig(raw, &c); err != nil {
		return Config{}, nil, err
	}
	var problems []api.Problem
	if c.DefaultMTU != 0 && (c.DefaultMTU < 68 || c.DefaultMTU > 65535) {
		problems = append(problems, api.Problem{Field: "config.default_mtu", Message: fmt.Sprintf("%d out of range [68, 65535]", c.DefaultMTU)})
	}
	if c.FlowPriority < 0 || c.FlowPriority > 65535 {
		problems = append(problems, api.Problem{Field: "config.flow_priority", Message: fmt.Sprintf("%d out of range [0, 65535]", c.FlowPriority)})
	}
	if c.StatsUpdateIntervalMS != 0 && c.StatsUpdateIntervalMS < MinStatsUpdateIntervalMS {
		problems = append(problems, api.Problem{Field: "config.stats_update_interval_ms",
			Message: fmt.Sprintf("%d below ovs-vswitchd's minimum %d", c.StatsUpdateIntervalMS, MinStatsUpdateIntervalMS)})
	}
	var types []uint16
	for i, name := range c.DropEthertypes {
		et, err := parseEthertype(name)
		if err != nil {
			problems = append(problems, api.Problem{Field: fmt.Sprintf("config.drop_ethertypes[%d]", i), Message: err.Error()})
			continue
		}
		if !slices.Contains(types, et) {
			types = append(types, et)
		}
	}
	if len(problems) > 0 {
		return Config{}, nil, sdk.Invalid(problems...)
	}
	slices.Sort(types)
	return c, types, nil
}

// parseEthertype accepts a name of ethertypeNames or "0x" and up to four hex digits (≥ 0x0600,
// below which the field is an 802.3 length).
func parseEthertype(s string) (uint16, error) {
	if et, ok := ethertypeNames[strings.ToLower(s)]; ok {
		return et, nil
	}
	hex, ok := strings.CutPrefix(strings.ToLower(s), "0x")
	if !ok {
		return 0, fmt.Errorf("%q is neither a known name (arp, ipv4, ipv6, lldp, vlan, qinq, mpls, rarp) nor 0xNNNN", s)
	}
	v, err := strconv.ParseUint(hex, 16, 16)
	if err != nil || v < 0x0600 {
		return 0, fmt.Errorf("%q is not an ethertype (0x0600–0xffff)", s)
	}
	return uint16(v), nil
}

// configSchema is the JSON schema of Config.
const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "veth plugin configuration",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "default_mtu": {"type": "integer", "minimum": 68, "maximum": 65535,
      "description": "MTU of pairs whose port has no options:mtu (default: the kernel's 1500)"},
    "create_netns": {"type": "boolean", "default": true,
      "description": "create a namespace named by options:netns when it does not exist"},
    "offloads": {"type": "boolean", "default": false,
      "description": "keep checksum and segmentation offloads on (the kernel datapath); off suits the userspace datapath"},
    "drop_ethertypes": {"type": "array", "items": {"type": "string"},
      "description": "ethertypes dropped on traffic from veth ports: arp, ipv4, ipv6, lldp, vlan, qinq, mpls, rarp or 0xNNNN"},
    "flow_priority": {"type": "integer", "minimum": 0, "maximum": 65535, "default": 100},
    "host_netns": {"type": "string",
      "description": "network namespace of ovs-vswitchd (a path, or a name under /run/netns); default: the plugin's own"},
    "stats_update_interval_ms": {"type": "integer", "minimum": 5000,
      "description": "contributed as Open_vSwitch other_config:stats-update-interval"}
  }
}`

// configDoc documents Config for humans.
const configDoc = `default_mtu: MTU of pairs without options:mtu. create_netns (default true): create missing
namespaces named by options:netns, removed again with their last pair. offloads (default false): keep
the pairs' offloads on (kernel datapath). drop_ethertypes: flows dropping
these ethertypes on traffic from veth ports (cookie from the host's range). flow_priority: their
priority (100). host_netns: ovs-vswitchd's network namespace when it is not ovsplaned's (a path or
an ip-netns name). stats_update_interval_ms: contributed as other_config:stats-update-interval.`
