package api

import (
	"fmt"
	"strconv"
	"strings"

	plugin "github.com/hashicorp/go-plugin"
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

// APIVersion is the revision of protocol version 1 this package implements, "MAJOR.MINOR".
// The minor number grows with additive changes (new calls, fields, enum values).
const APIVersion = "1.0"

// SupportedAPIVersions returns the revisions this package can talk, newest first.
func SupportedAPIVersions() []string { return []string{APIVersion} }

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
func DispenseName(c Capability) (string, bool) {
	switch c {
	case CapabilityPortProvider:
		return NamePortProvider, true
	case CapabilityWatcher:
		return NameWatcher, true
	case CapabilityGlobalConfig:
		return NameGlobalConfig, true
	case CapabilityFlowProgram:
		return NameFlowProgram, true
	case CapabilityDataPath:
		return NameDataPath, true
	}
	return "", false
}

// CapabilitiesOf returns the capabilities impl implements, in Capability order.
func CapabilitiesOf(impl Plugin) []Capability {
	var caps []Capability
	if _, ok := impl.(PortProvider); ok {
		caps = append(caps, CapabilityPortProvider)
	}
	if _, ok := impl.(Watcher); ok {
		caps = append(caps, CapabilityWatcher)
	}
	if _, ok := impl.(GlobalConfigContributor); ok {
		caps = append(caps, CapabilityGlobalConfig)
	}
	if _, ok := impl.(FlowProgrammer); ok {
		caps = append(caps, CapabilityFlowProgram)
	}
	if _, ok := impl.(DataPath); ok {
		caps = append(caps, CapabilityDataPath)
	}
	return caps
}

// ClientPluginSets returns the host's ClientConfig.VersionedPlugins: every dispense name for
// protocol version 1. Dispensed values implement Plugin (NamePlugin) or the capability's
// interface; each call goes over the plugin's gRPC connection with the caller's context.
func ClientPluginSets() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {
			NamePlugin:       &BasePlugin{},
			NamePortProvider: &PortProviderPlugin{},
			NameWatcher:      &WatcherPlugin{},
			NameGlobalConfig: &GlobalConfigPlugin{},
			NameFlowProgram:  &FlowProgramPlugin{},
			NameDataPath:     &DataPathPlugin{},
		},
	}
}

// ClientPluginSet returns the host's plugin set of one protocol version, for
// ClientConfig.Plugins when reattaching (go-plugin negotiates no version on reattach). A
// version this package does not speak is refused with a message naming both sides' versions.
func ClientPluginSet(version int) (plugin.PluginSet, error) {
	set, ok := ClientPluginSets()[version]
	if !ok {
		return nil, Errorf(FailedPrecondition, "incompatible API version with plugin. Plugin version: %d, Client versions: [%d]", version, ProtocolVersion)
	}
	return set, nil
}

// ServerPluginSets returns a plugin's ServeConfig.VersionedPlugins: the base service and the
// service of every capability impl implements, for protocol version 1.
func ServerPluginSets(impl Plugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{ProtocolVersion: pluginSet(impl)}
}

func pluginSet(impl Plugin) plugin.PluginSet {
	set := plugin.PluginSet{NamePlugin: &BasePlugin{Impl: impl}}
	if p, ok := impl.(PortProvider); ok {
		set[NamePortProvider] = &PortProviderPlugin{Impl: p}
	}
	if w, ok := impl.(Watcher); ok {
		set[NameWatcher] = &WatcherPlugin{Impl: w}
	}
	if g, ok := impl.(GlobalConfigContributor); ok {
		set[NameGlobalConfig] = &GlobalConfigPlugin{Impl: g}
	}
	if f, ok := impl.(FlowProgrammer); ok {
		set[NameFlowProgram] = &FlowProgramPlugin{Impl: f}
	}
	if d, ok := impl.(DataPath); ok {
		set[NameDataPath] = &DataPathPlugin{Impl: d}
	}
	return set
}

// ServerPluginMap returns the plugin set of ServerPluginSets as a map of plugins, the form
// go-plugin's TestPluginGRPCConn takes.
func ServerPluginMap(impl Plugin) map[string]plugin.Plugin {
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
		for _, ours := range SupportedAPIVersions() {
			if theirs != ours {
				continue
			}
			if minor := minorOf(ours); minor > bestMinor {
				best, bestMinor = ours, minor
			}
		}
	}
	if best == "" {
		return "", Errorf(InvalidArgument, "plugin API versions %v: none supported by this host, which supports %v",
			pluginVersions, SupportedAPIVersions())
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
