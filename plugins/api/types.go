package api

import (
	"fmt"
	"slices"
)

// Capability names an optional service a plugin serves.
type Capability int

// The capabilities, each with its interface.
const (
	CapabilityUnspecified  Capability = 0
	CapabilityPortProvider Capability = 1 // PortProvider
	CapabilityWatcher      Capability = 2 // Watcher
	CapabilityGlobalConfig Capability = 3 // GlobalConfigContributor
	CapabilityFlowProgram  Capability = 4 // FlowProgrammer
	CapabilityDataPath     Capability = 5 // DataPath
)

// String returns the capability's name, e.g. "port_provider" (its dispense name).
func (c Capability) String() string {
	switch c {
	case CapabilityPortProvider:
		return "port_provider"
	case CapabilityWatcher:
		return "watcher"
	case CapabilityGlobalConfig:
		return "global_config"
	case CapabilityFlowProgram:
		return "flow_program"
	case CapabilityDataPath:
		return "datapath"
	}
	return fmt.Sprintf("capability(%d)", int(c))
}

// ObjectKind is what an ObjectType describes.
type ObjectKind int

// The object kinds.
const (
	ObjectKindUnspecified ObjectKind = 0
	ObjectKindPort        ObjectKind = 1 // a port type (PortRequest.Type), served by PortProvider
	ObjectKindJob         ObjectKind = 2 // a job type (Job.Type), served by DataPath
)

// Info describes a plugin. It must not depend on configuration.
type Info struct {
	// Name is unique among the host's plugins and used in ownership tags: [a-z][a-z0-9-]*.
	Name string
	// Version is the plugin's own version (semantic versioning recommended).
	Version string
	// APIVersions are the plugin API revisions ("MAJOR.MINOR") the plugin supports. The SDK's
	// server fills in SupportedAPIVersions when empty.
	APIVersions []string
	// Capabilities are the services the plugin serves. The SDK's server sets them from
	// the interfaces the implementation satisfies; what a plugin puts here is ignored.
	Capabilities []Capability
	// Types are the port and job types the plugin provides.
	Types []ObjectType
	// Watch selects the interfaces a Watcher gets events for.
	Watch WatchFilter
	// Description is one line for humans.
	Description string
}

// ObjectType is a type of object a plugin provides.
type ObjectType struct {
	// Name is the type name, e.g. "vdpa"; unique across the host's plugins.
	Name string
	Kind ObjectKind
	// OptionsSchema is the JSON schema (draft 2020-12) of the options; for ports a JSON object
	// of strings (OVS options are strings).
	OptionsSchema string
	// Doc documents the type and its options for humans.
	Doc string
}

// WatchFilter selects interfaces; an empty list does not restrict.
type WatchFilter struct {
	InterfaceTypes []string // e.g. dpdkvhostuser, dpdkvhostuserclient
	Bridges        []string
	Owners         []PortOwner
	// ExternalIDKeys keeps the interfaces whose external_ids (or their port's) carry at least
	// one of these keys, e.g. "iface-id" for the ports os-vif creates.
	ExternalIDKeys []string
}

// ConfigSchema describes a plugin's configuration.
type ConfigSchema struct {
	// JSONSchema is the JSON schema (draft 2020-12) of the configuration object; empty means
	// the plugin takes no configuration.
	JSONSchema string
	// Doc documents the configuration for humans.
	Doc string
}

// ConfigureRequest is what the host hands a plugin after start, restart and config reload.
type ConfigureRequest struct {
	// Config is the plugin's configuration, a JSON object ("{}" when none is configured).
	Config []byte
	// Facts describe the running Open vSwitch.
	Facts HostFacts
	// APIVersion is the revision the host chose from Info.APIVersions.
	APIVersion string
	// Cookies are the OpenFlow cookies the plugin's flows must use.
	Cookies CookieRange
	// Groups are the OpenFlow group ids the plugin's groups must use.
	Groups GroupRange
}

// HostFacts is a snapshot of the running Open vSwitch and the host's paths, taken when the
// host calls Configure.
type HostFacts struct {
	OVSVersion      string   // Open_vSwitch.ovs_version, e.g. "3.1.0"
	DPDKVersion     string   // Open_vSwitch.dpdk_version; empty without DPDK
	DPDKInitialized bool     // Open_vSwitch.dpdk_initialized
	IfaceTypes      []string // Open_vSwitch.iface_types
	DatapathTypes   []string // Open_vSwitch.datapath_types
	// AppctlCommands are the command names of `ovs-appctl list-commands`.
	AppctlCommands []string
	// DataDir is a directory private to the plugin, kept across restarts.
	DataDir string
	// OVSRunDir is Open vSwitch's run directory, e.g. /var/run/openvswitch.
	OVSRunDir string
	// HostVersion is ovsplaned's version.
	HostVersion string
	// OtherConfig is Open_vSwitch.other_config as OVSDB holds it (pmd-cpu-mask, dpdk-extra,
	// vhost-async-support, ...). The host configures plugins again when it changes.
	OtherConfig map[string]string
}

// CookieRange is a set of OpenFlow cookies: every cookie c with c&Mask == Value.
type CookieRange struct {
	Value, Mask uint64
}

// Contains reports whether cookie is in the range.
func (r CookieRange) Contains(cookie uint64) bool { return cookie&r.Mask == r.Value }

// GroupRange is the OpenFlow group ids First..First+Count-1.
type GroupRange struct {
	First, Count uint32
}

// Contains reports whether id is in the range.
func (r GroupRange) Contains(id uint32) bool { return id >= r.First && id-r.First < r.Count }

// HealthState is a plugin's own view of its health.
type HealthState int

// The health states.
const (
	HealthUnspecified HealthState = 0
	HealthOK          HealthState = 1
	// HealthDegraded means working with reduced function; the host keeps calling.
	HealthDegraded HealthState = 2
	// HealthFailing means not working; the host reports the plugin's objects in error and may
	// restart it.
	HealthFailing HealthState = 3
)

// Health is the answer to Plugin.Health.
type Health struct {
	State   HealthState
	Message string
}

// Problem is one field-level problem, e.g. {Field: "options.netns", Message: "…"}.
type Problem struct {
	Field   string
	Message string
}

// String returns "field: message".
func (p Problem) String() string { return p.Field + ": " + p.Message }

// PortRequest is one port of a type the plugin provides, as the host's desired state has it.
type PortRequest struct {
	Bridge      string
	Name        string
	Type        string // one of the plugin's port types
	Options     map[string]string
	ExternalIDs map[string]string
	// State is what the last successful Attach of this port returned, as stored by the host;
	// nil for a port never attached.
	State []byte
	// Replay is true when the host asks again for a port it attached before: after a host or
	// plugin restart, or a retry. State then holds what the plugin returned last time; a
	// stateless plugin uses Replay to adopt rather than create.
	Replay bool
}

// MaxStateSize is the largest Attachment.State the host accepts (it is stored in OVSDB).
const MaxStateSize = 2048

// Attachment is the OVS shape of an attached port: what the host writes to OVSDB.
type Attachment struct {
	// Ports are the OVSDB ports to write, at least one.
	Ports []OVSPort
	// State is opaque plugin state (at most MaxStateSize bytes), stored by the host in OVSDB
	// external_ids and handed back in PortRequest.State.
	State []byte
	// Status is for humans, e.g. "vf 3 of 0000:3b:00.0".
	Status string
	// Endpoints are what a user needs, e.g. {"vhost-vdpa": "/dev/vhost-vdpa-3"}.
	Endpoints map[string]string
	// Bridges are bridges the port needs beyond the request's (e.g. a tunnel bridge): the host
	// creates them in the port's transaction, tags them with the plugin, and removes them with
	// the port. Ports may name them in OVSPort.Bridge.
	Bridges []OVSBridge
	// Jobs are the port's data-path jobs (the plugin must have the DataPath capability): the
	// host starts them after the port is written, starts them again after the plugin restarts,
	// and stops them when the port is removed. Names are unique per plugin.
	Jobs []Job
}

// OVSBridge is one OVSDB Bridge row a plugin's port needs.
type OVSBridge struct {
	Name         string
	DatapathType string   // e.g. "netdev"; "" for OVS's default
	Protocols    []string // e.g. OpenFlow13
	OtherConfig  map[string]string
	ExternalIDs  map[string]string
}

// OVSPort is one OVSDB Port row with its interfaces.
type OVSPort struct {
	Bridge      string // "" means the request's bridge
	Name        string
	Interfaces  []OVSInterface
	Tag         *int
	Trunks      []int
	VLANMode    string
	BondMode    string
	LACP        string
	OtherConfig map[string]string
	ExternalIDs map[string]string
}

// OVSInterface is one OVSDB Interface row.
type OVSInterface struct {
	Name string
	// Type is an interface type of the running OVS (HostFacts.IfaceTypes), "" for system.
	Type          string
	Options       map[string]string
	OtherConfig   map[string]string
	ExternalIDs   map[string]string
	MTURequest    *int
	OfportRequest *int
}

// OwnedPort is a port a PortProvider believes it owns.
type OwnedPort struct {
	Bridge, Name, Type string
	State              []byte
	Status             string
}

// PortOwner tells who created a port.
type PortOwner int

// The owners.
const (
	OwnerUnspecified PortOwner = 0
	OwnerOvsplane    PortOwner = 1 // ovsplaned, for its configuration or API
	OwnerPlugin      PortOwner = 2 // ovsplaned, for a plugin's port type
	OwnerForeign     PortOwner = 3 // someone else: os-vif, ovs-vsctl, an operator
)

// PortEventKind is what happened to an interface.
type PortEventKind int

// The event kinds.
const (
	EventUnspecified PortEventKind = 0
	EventAdded       PortEventKind = 1
	EventChanged     PortEventKind = 2
	EventRemoved     PortEventKind = 3
)

// PortEvent is the state of one interface after a change.
type PortEvent struct {
	Kind        PortEventKind
	Owner       PortOwner
	Plugin      string // the owning plugin when Owner is OwnerPlugin
	Bridge      string
	Port        string
	Interface   string
	Type        string
	Options     map[string]string
	OtherConfig map[string]string
	ExternalIDs map[string]string
	// Ofport is 0 while not assigned, -1 when OVS failed to add the interface.
	Ofport int64
	Error  string // Interface.error
}

// PortEventBatch is one delivery to a Watcher.
type PortEventBatch struct {
	// Events are in OVSDB order, at most one per interface (its latest state).
	Events []PortEvent
	// Resync is true on the first batch of a full snapshot (after a plugin or host restart):
	// every matching interface follows as EventAdded; interfaces not listed are gone.
	Resync bool
	// ResyncDone is true on the last batch of a snapshot.
	ResyncDone bool
}

// InterfaceChange is a watcher's answer about one interface of the batch: other_config keys to
// change, its status as the plugin sees it, or both.
type InterfaceChange struct {
	Interface string
	Set       map[string]string
	// Remove lists keys to remove; only keys this plugin set are removed.
	Remove []string
	// Status, when not nil, replaces the plugin's status of the interface (a zero Status clears
	// it). The host keeps statuses in memory only, never in OVSDB, shows them in `vsctl status`
	// and the API's ListStatus (foreign interfaces included), and drops an interface's status
	// when the interface goes away, when a resync no longer lists it, and when the plugin stops.
	// After every Configure the host resyncs the plugin's watch, so statuses that depend on
	// configuration or host facts are recomputed.
	Status *InterfaceStatus
}

// StatusLevel grades an InterfaceStatus.
type StatusLevel string

// The status levels.
const (
	// StatusInfo: the plugin's view, nothing to do (e.g. "accelerated by wq0.1").
	StatusInfo StatusLevel = "info"
	// StatusWarning: works, but not as configured or not at its best; Summary says why and
	// the fix.
	StatusWarning StatusLevel = "warning"
	// StatusError: the plugin cannot do for this interface what it is configured to do.
	StatusError StatusLevel = "error"
)

// InterfaceStatus is a watcher plugin's one-line view of an interface, with optional details
// (key/value facts such as the DMA queue in use). Summary is at most MaxStatusSummaryBytes and
// Details at most MaxStatusDetails entries, each key at most MaxStatusKeyBytes and each value at
// most MaxStatusValueBytes; all text is UTF-8 without control characters.
type InterfaceStatus struct {
	Level   StatusLevel
	Summary string
	Details map[string]string
}

// IsZero reports whether s is the zero status, which clears an interface's status.
func (s InterfaceStatus) IsZero() bool {
	return s.Level == "" && s.Summary == "" && len(s.Details) == 0
}

// GlobalConfig is a plugin's contribution to the Open_vSwitch row.
type GlobalConfig struct {
	// OtherConfig are Open_vSwitch.other_config keys, e.g. {"vhost-async-support": "true"}.
	OtherConfig map[string]string
	// DPDKExtra are fragments of other_config:dpdk-extra, each a whole argument list.
	DPDKExtra []string
}

// BridgeFacts describes a bridge for FlowProgrammer.Flows.
type BridgeFacts struct {
	Name         string
	DatapathType string
	Protocols    []string // e.g. OpenFlow13
	Ports        []BridgePort
}

// BridgePort is one interface of a bridge.
type BridgePort struct {
	Port, Interface, Type string
	Ofport                int64
	Owner                 PortOwner
	Plugin                string
	ExternalIDs           map[string]string
}

// FlowSet is the whole desired set of a plugin's flows and groups on one bridge.
type FlowSet struct {
	Flows  []Flow
	Groups []Group
	// RefreshMillis asks the host to call Flows again after that long (0: only on changes).
	RefreshMillis uint32
}

// Flow is one OpenFlow flow; Match and Actions use ovs-ofctl syntax.
type Flow struct {
	// Cookie must be in the plugin's CookieRange; 0 means CookieRange.Value.
	Cookie      uint64
	Table       uint8
	Priority    uint16
	Match       string // e.g. "in_port=1,ip"; empty matches everything
	Actions     string // e.g. "group:7"
	IdleTimeout uint16
	HardTimeout uint16
}

// Group is one OpenFlow group; its id must be in the plugin's GroupRange.
type Group struct {
	ID              uint32
	Type            string // all, select, indirect or fast_failover
	Buckets         []Bucket
	SelectionMethod string // optional, for select groups: hash or dp_hash
}

// Bucket is one bucket of a group.
type Bucket struct {
	Actions   string // ovs-ofctl syntax, e.g. "output:3"
	Weight    uint16 // select groups
	WatchPort uint32 // fast_failover groups; 0 means none
}

// Job is a named long-running data-path job.
type Job struct {
	Name   string
	Type   string // one of the plugin's job types
	Config []byte // a JSON object
}

// StatsRequest selects the jobs and the sampling interval of a stats stream.
type StatsRequest struct {
	Jobs           []string // empty means all
	IntervalMillis uint32   // 0 means the plugin's default
}

// MetricKind tells how a metric's values combine.
type MetricKind int

// The metric kinds.
const (
	MetricUnspecified MetricKind = 0
	MetricGauge       MetricKind = 1
	MetricCounter     MetricKind = 2 // monotonic since the job started
)

// Metric is one value of a sample.
type Metric struct {
	Name   string
	Kind   MetricKind
	Value  float64
	Labels map[string]string
}

// StatsSample is the statistics of one job at one time.
type StatsSample struct {
	Job          string
	TimeUnixNano int64
	Metrics      []Metric
}

// HasIfaceType reports whether the running OVS supports an interface type (iface_types).
func (f HostFacts) HasIfaceType(t string) bool { return slices.Contains(f.IfaceTypes, t) }

// HasDatapathType reports whether the running OVS supports a datapath type (datapath_types).
func (f HostFacts) HasDatapathType(t string) bool { return slices.Contains(f.DatapathTypes, t) }

// HasAppctlCommand reports whether ovs-appctl offers a command, e.g. "dpif-netdev/pmd-rxq-show".
func (f HostFacts) HasAppctlCommand(c string) bool { return slices.Contains(f.AppctlCommands, c) }
