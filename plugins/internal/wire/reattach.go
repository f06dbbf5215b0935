package wire

import (
	"encoding/json"
	"fmt"
	"net"

	plugin "github.com/hashicorp/go-plugin"
)

// ReattachEnv is the environment variable in which a plugin served in debug mode (see
// plugins/sdk) prints its Reattach, as JSON, for the host to attach to instead of starting
// the binary itself.
const ReattachEnv = "OVSPLANE_PLUGIN_REATTACH"

// Reattach locates a plugin process that is already running (a plugin served in debug mode,
// for example under a debugger): the JSON form of go-plugin's ReattachConfig.
type Reattach struct {
	// Plugin is the plugin's name (Info.Name), as printed by the plugin.
	Plugin          string `json:"plugin"`
	ProtocolVersion int    `json:"protocol_version"`
	Network         string `json:"network"` // "unix" or "tcp"
	Address         string `json:"address"`
	Pid             int    `json:"pid"`
}

// ReattachOf converts go-plugin's ReattachConfig of a plugin named name.
func ReattachOf(name string, c *plugin.ReattachConfig) Reattach {
	r := Reattach{Plugin: name, ProtocolVersion: c.ProtocolVersion, Pid: c.Pid}
	if c.Addr != nil {
		r.Network, r.Address = c.Addr.Network(), c.Addr.String()
	}
	return r
}

// ParseReattach parses the JSON of a Reattach.
func ParseReattach(data []byte) (Reattach, error) {
	var r Reattach
	if err := json.Unmarshal(data, &r); err != nil {
		return Reattach{}, fmt.Errorf("parse %s: %w", ReattachEnv, err)
	}
	if r.Address == "" || r.Pid <= 0 {
		return Reattach{}, fmt.Errorf("parse %s: address and pid are required", ReattachEnv)
	}
	return r, nil
}

// Config returns the go-plugin ReattachConfig for ClientConfig.Reattach (gRPC, test mode: the
// host does not kill a process it did not start). AutoMTLS and SecureConfig cannot be used
// with it, and go-plugin negotiates no version on reattach: set ClientConfig.Plugins from
// ClientPluginSet(r.ProtocolVersion).
func (r Reattach) Config() (*plugin.ReattachConfig, error) {
	var addr net.Addr
	var err error
	switch r.Network {
	case "unix":
		addr, err = net.ResolveUnixAddr("unix", r.Address)
	case "tcp":
		addr, err = net.ResolveTCPAddr("tcp", r.Address)
	default:
		return nil, fmt.Errorf("reattach %s: unknown network %q", r.Plugin, r.Network)
	}
	if err != nil {
		return nil, fmt.Errorf("reattach %s: %w", r.Plugin, err)
	}
	return &plugin.ReattachConfig{
		Protocol:        plugin.ProtocolGRPC,
		ProtocolVersion: r.ProtocolVersion,
		Addr:            addr,
		Pid:             r.Pid,
		Test:            true,
	}, nil
}
