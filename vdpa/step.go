package vdpa

import (
	"fmt"
	"slices"
	"strings"
)

// Op is what a step does.
type Op string

// Step operations. Actions change the host and are recorded in State.Done when they did; checks
// only wait and verify.
const (
	OpSetAttr         Op = "set-attr"           // write To to sysfs attribute Object (was From)
	OpPCIBind         Op = "pci-bind"           // bind PCI device Object to Driver
	OpPCIUnbind       Op = "pci-unbind"         // unbind PCI device Object from Driver
	OpEswitch         Op = "eswitch"            // devlink eswitch mode of PF Object: From -> To
	OpVDPAAdd         Op = "vdpa-add"           // create vdpa device Object with VDPA params
	OpVDPAAdopt       Op = "vdpa-adopt"         // take ownership of existing vdpa device Object
	OpVDPABusDriver   Op = "vdpa-bus-driver"    // make vdpa device Object bound to To (plan only)
	OpVDPABind        Op = "vdpa-bind"          // bind vdpa device Object to Driver
	OpVDPAUnbind      Op = "vdpa-unbind"        // unbind vdpa device Object from Driver
	OpWaitRepresentor Op = "wait-representor"   // check: VF Object's representor netdev exists
	OpWaitCharDev     Op = "wait-chardev"       // check: /dev/vhost-vdpa-N of device Object exists
	OpWaitNetdev      Op = "wait-virtio-netdev" // check: virtio netdev of device Object exists
)

// Scope says whose a step is: "pf" steps (VF count, eswitch, VF driver binding) are shared by
// every port on the PF; "port" steps belong to one port.
type Scope string

// Scopes.
const (
	ScopePF   Scope = "pf"
	ScopePort Scope = "port"
)

// VDPAParams are a vdpa-add step's parameters.
type VDPAParams struct {
	MgmtDev string `json:"mgmtdev"`
	MAC     string `json:"mac,omitempty"`
	MTU     int    `json:"mtu,omitempty"`
	MaxVQP  int    `json:"max_vqp,omitempty"`
}

// Step is one planned or performed operation, with what it does and why, in words.
type Step struct {
	Op     Op          `json:"op"`
	Scope  Scope       `json:"scope"`
	Object string      `json:"object"`
	Driver string      `json:"driver,omitempty"`
	From   string      `json:"from,omitempty"`
	To     string      `json:"to,omitempty"`
	VDPA   *VDPAParams `json:"vdpa,omitempty"`
	What   string      `json:"what"`
	Why    string      `json:"why"`
}

// Endpoint is what the guest attaches to.
type Endpoint struct {
	// Kind is "vhost-vdpa" (Path is /dev/vhost-vdpa-N), "vhost-user" (Path is a socket) or
	// "netdev" (Netdev is a host virtio-net interface).
	Kind   string `json:"kind"`
	Path   string `json:"path,omitempty"`
	Netdev string `json:"netdev,omitempty"`
}

// Process is a helper process the port needs (dpdk-pmd: the DPDK vDPA driver).
type Process struct {
	Argv []string `json:"argv"`
	Note string   `json:"note"`
}

// OVSPlan is what the plugin asks the daemon to write to OVSDB.
type OVSPlan struct {
	Interface OVSInterface `json:"interface"`
	// OtherConfig holds Open_vSwitch:other_config keys to set (only those that change).
	OtherConfig map[string]string `json:"other_config,omitempty"`
	// RestartRequired: ovs-vswitchd must restart for OtherConfig to take effect.
	RestartRequired bool `json:"restart_required"`
	// BridgeDatapathType is the datapath_type the port's bridge needs.
	BridgeDatapathType string `json:"bridge_datapath_type"`
}

// Plan is a dry run: the ordered steps Apply would take now, and the OVS and guest side.
type Plan struct {
	Request     Request   `json:"request"`
	PF          string    `json:"pf"`
	VF          string    `json:"vf"`
	VFIndex     int       `json:"vf_index"`
	Representor string    `json:"representor,omitempty"`
	Steps       []Step    `json:"steps"`
	OVS         OVSPlan   `json:"ovs"`
	Endpoint    Endpoint  `json:"endpoint"`
	Process     *Process  `json:"process,omitempty"`
	Warnings    []Warning `json:"warnings,omitempty"`
	Notes       []string  `json:"notes,omitempty"`
}

// Text renders the plan for people: the numbered steps with their reasons, then the OVS side,
// the guest endpoint, the helper process, warnings and notes.
func (p *Plan) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "port %s: %s VF %d (%s), mode %s\n", p.Request.Name, p.PF, p.VFIndex, p.VF, p.Request.Mode)
	if len(p.Steps) == 0 {
		b.WriteString("host: nothing to do\n")
	}
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%2d. [%s] %s\n      why: %s\n", i+1, s.Scope, s.What, s.Why)
	}
	ifc := p.OVS.Interface
	fmt.Fprintf(&b, "ovs: interface %s type=%s", ifc.Name, ifc.Type)
	for _, k := range sortedKeys(ifc.Options) {
		fmt.Fprintf(&b, " options:%s=%s", k, ifc.Options[k])
	}
	b.WriteString("\n")
	for _, k := range sortedKeys(p.OVS.OtherConfig) {
		fmt.Fprintf(&b, "ovs: other_config:%s=%s\n", k, p.OVS.OtherConfig[k])
	}
	if p.OVS.RestartRequired {
		b.WriteString("ovs: ovs-vswitchd restart required\n")
	}
	e := p.Endpoint
	fmt.Fprintf(&b, "guest: %s %s\n", e.Kind, orDefault(e.Path+e.Netdev, "(known after apply)"))
	if p.Process != nil {
		fmt.Fprintf(&b, "process: %s\n", strings.Join(p.Process.Argv, " "))
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&b, "warning %s: %s\n", w.Code, w.Message)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
