package wire

import (
	"fmt"
	"strconv"
	"strings"

	plugin "github.com/hashicorp/go-plugin"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// ProtocolVersion is the plugin protocol version this package speaks (ovsplane.plugin.v1).
// go-plugin negotiates it at start: a plugin serving only other versions is refused before any
// call, with go-plugin's message naming both sides' versions (see VersionMismatch).
const ProtocolVersion = 1

// The magic cookie go-plugin passes to the plugin in its environment. It keeps a plugin binary
// run by hand from waiting for a host; it is not a security boundary.
const (
	MagicCookieKey   = "OVSPLANE_PLUGIN_MAGIC_COOKIE"
	MagicCookieValue = "ovsplane-plugin-5d0f2a4c9b7e"
)

// Handshake returns the go-plugin handshake for both sides. ProtocolVersion is only
// go-plugin's fallback: both sides pass VersionedPlugins.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// The names the host dispenses: NamePlugin always, the others for the capabilities Info lists.
const (
	NamePlugin       = "plugin"
	NamePortProvider = "port_provider"
	NameWatcher      = "watcher"
	NameGlobalConfig = "global_config"
	NameFlowProgram  = "flow_program"
	NameDataPath     = "datapath"
)

// DispenseName returns the dispense name of a capability.
func DispenseName(c api.Capability) (string, bool) {
	switch c {
	case api.CapabilityPortProvider:
		return NamePortProvider, true
	case api.CapabilityWatcher:
		return NameWatcher, true
	case api.CapabilityGlobalConfig:
		return NameGlobalConfig, true
	case api.CapabilityFlowProgram:
		return NameFlowProgram, true
	case api.CapabilityDataPath:
		return NameDataPath, true
	}
	return "", false
}

// CapabilitiesOf returns the capabilities impl implements, in Capability order.
func CapabilitiesOf(impl api.Plugin) []api.Capability {
	var caps []api.Capability
	if _, ok := impl.(api.PortProvider); ok {
		caps = append(caps, api.CapabilityPortProvider)
	}
	if _, ok := impl.(api.Watcher); ok {
		caps = append(caps, api.CapabilityWatcher)
	}
	if _, ok := impl.(api.GlobalConfigContributor); ok {
		caps = append(caps, api.CapabilityGlobalConfig)
	}
	if _, ok := impl.(api.FlowProgrammer); ok {
		caps = append(caps, api.CapabilityFlowProgram)
	}
	if _, ok := impl.(api.DataPath); ok {
		caps = append(caps, api.CapabilityDataPath)
	}
	return caps
}

// ClientPluginSets returns the host's ClientConfig.VersionedPlugins: every dispense name for
// protocol version 1. Dispensed values implement Plugin (NamePlugin) or the capability's
// interface; each call goes over the plugin's gRPC connection with the caller's context.
func ClientPluginSets() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {
			NamePlugin:       &basePlugin{},
			NamePortProvider: &portProviderPlugin{},
			NameWatcher:      &watcherPlugin{},
			NameGlobalConfig: &globalConfigPlugin{},
			NameFlowProgram:  &flowProgramPlugin{},
			NameDataPath:     &dataPathPlugin{},
		},
	}
}

// ClientPluginSet returns the host's plugin set of one protocol version, for
// ClientConfig.Plugins when reattaching (go-plugin negotiates no version on reattach). A
// version this package does not speak is refused with a message naming both sides' versions.
func ClientPluginSet(version int) (plugin.PluginSet, error) {
	set, ok := ClientPluginSets()[version]
	if !ok {
		return nil, api.Errorf(api.FailedPrecondition, "incompatible API version with plugin. Plugin version: %d, Client versions: [%d]", version, ProtocolVersion)
	}
	return set, nil
}

// ServerPluginSets returns a plugin's ServeConfig.VersionedPlugins: the base service and the
// service of every capability impl implements, for protocol version 1.
func ServerPluginSets(impl api.Plugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{ProtocolVersion: pluginSet(impl)}
}

func pluginSet(impl api.Plugin) plugin.PluginSet {
	set := plugin.PluginSet{NamePlugin: &basePlugin{Impl: impl}}
	if p, ok := impl.(api.PortProvider); ok {
		set[NamePortProvider] = &portProviderPlugin{Impl: p}
	}
	if w, ok := impl.(api.Watcher); ok {
		set[NameWatcher] = &watcherPlugin{Impl: w}
	}
	if g, ok := impl.(api.GlobalConfigContributor); ok {
		set[NameGlobalConfig] = &globalConfigPlugin{Impl: g}
	}
	if f, ok := impl.(api.FlowProgrammer); ok {
		set[NameFlowProgram] = &flowProgramPlugin{Impl: f}
	}
	if d, ok := impl.(api.DataPath); ok {
		set[NameDataPath] = &dataPathPlugin{Impl: d}
	}
	return set
}

// ServerPluginMap returns the plugin set of ServerPluginSets as a map of plugins, the form
// go-plugin's TestPluginGRPCConn takes.
func ServerPluginMap(impl api.Plugin) map[string]plugin.Plugin {
	m := map[string]plugin.Plugin{}
	for name, p := range pluginSet(impl) {
		m[name] = p
	}
	return m
}

// VersionMismatch reports whether err is go-plugin's refusal of a plugin that speaks no
// protocol version the host does; its message names both sides' versions.
func VersionMismatch(err error) bool {
	return err != nil && strings.Contains(err.Error(), "incompatible API version with plugin")
}

// NegotiateAPIVersion returns the newest revision of protocol version 1 that both this package
// and a plugin (Info.APIVersions) support. A plugin listing no revision is taken to support
// APIVersion's major with minor 0. It fails with InvalidArgument naming both lists when there
// is none.
func NegotiateAPIVersion(pluginVersions []string) (string, error) {
	if len(pluginVersions) == 0 {
		pluginVersions = []string{fmt.Sprintf("%d.0", ProtocolVersion)}
	}
	best, bestMinor := "", -1
	for _, theirs := range pluginVersions {
		for _, ours := range api.SupportedAPIVersions() {
			if theirs != ours {
				continue
			}
			if minor := minorOf(ours); minor > bestMinor {
				best, bestMinor = ours, minor
			}
		}
	}
	if best == "" {
		return "", api.Errorf(api.InvalidArgument, "plugin API versions %v: none supported by this host, which supports %v",
			pluginVersions, api.SupportedAPIVersions())
	}
	return best, nil
}

func minorOf(version string) int {
	_, minor, ok := strings.Cut(version, ".")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(minor)
	if err != nil {
		return -1
	}
	return n
}
