package vdpa

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Mode is the datapath model of a vDPA port.
type Mode string

// The three modes (docs/vdpa.md explains when to use which).
const (
	// ModeKernel: kernel vDPA; the guest gets /dev/vhost-vdpa-N (or a host virtio netdev with
	// bus driver virtio_vdpa); OVS attaches the VF representor.
	ModeKernel Mode = "kernel"
	// ModeDPDKPMD: a DPDK mlx5 vDPA driver process (-a <VF>,class=vdpa) serves a vhost-user
	// socket; OVS attaches the VF representor.
	ModeDPDKPMD Mode = "dpdk-pmd"
	// ModeOVSFork: NVIDIA's OVS fork relays through a type=dpdkvdpa port it owns.
	ModeOVSFork Mode = "ovs-fork"
)

// Modes lists the modes in documentation order.
var Modes = []Mode{ModeKernel, ModeDPDKPMD, ModeOVSFork}

// Eswitch policies.
const (
	EswitchSwitchdev = "switchdev"
	EswitchSkip      = "skip"
	eswitchLegacy    = "legacy"
)

// DefaultSocketDir holds the vhost-user sockets of dpdk-pmd and ovs-fork ports.
const DefaultSocketDir = "/run/ovsplane/vdpa"

// Request asks for one vDPA port. Zero values take the documented defaults; Normalize fills them.
type Request struct {
	// Name is the OVS interface name, also the default vdpa device name. Required.
	Name string `json:"name"`
	// PF is the physical function as a PCI address or netdev name. Required.
	PF string `json:"pf"`
	// VF is the VF index on the PF.
	VF int `json:"vf"`
	// MAC, MTU and MaxVQP configure the vdpa device (kernel mode) and the guest-facing MAC.
	MAC    string `json:"mac,omitempty"`
	MTU    int    `json:"mtu,omitempty"`
	MaxVQP int    `json:"max_vqp,omitempty"`
	// Mode defaults to kernel.
	Mode Mode `json:"mode"`
	// NumVFs is the VF count to enable when the PF has fewer than VF+1 (default VF+1).
	NumVFs int `json:"num_vfs,omitempty"`
	// Eswitch is switchdev (default) or skip (BlueField DPU mode: the Arm owns the eswitch).
	Eswitch string `json:"eswitch,omitempty"`
	// BusDriver (kernel mode) is vhost_vdpa (default, for VMs) or virtio_vdpa (host netdev).
	BusDriver string `json:"bus_driver,omitempty"`
	// VDPAName is the vdpa device name (default Name).
	VDPAName string `json:"vdpa_name,omitempty"`
	// SocketDir holds the vhost-user socket (dpdk-pmd, ovs-fork; default DefaultSocketDir).
	SocketDir string `json:"socket_dir,omitempty"`
	// HWOffload asks for other_config:hw-offload=true (default true).
	HWOffload *bool `json:"hw_offload,omitempty"`
	// Adopt takes over an existing vdpa device of the same name, parent and configuration, so
	// that teardown deletes it.
	Adopt bool `json:"adopt,omitempty"`
}

var reName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$`)

// Normalize validates the request and fills in defaults, failing with INVALID_REQUEST.
func (r Request) Normalize() (Request, error) {
	bad := func(field, format string, args ...any) (Request, error) {
		e := newErr(CodeInvalidRequest, r.Name, nil, format, args...)
		e.Field = field
		return r, e
	}
	if !reName.MatchString(r.Name) {
		return bad("name", "name %q: want 1-63 letters, digits, '_', '.', ':' or '-'", r.Name)
	}
	if r.PF == "" {
		return bad("pf", "pf is required (a PCI address such as 0000:65:00.0, or the PF's netdev)")
	}
	if r.VF < 0 {
		return bad("vf", "vf %d: must be >= 0", r.VF)
	}
	if r.Mode == "" {
		r.Mode = ModeKernel
	}
	if !slices.Contains(Modes, r.Mode) {
		return bad("mode", "mode %q: want kernel, dpdk-pmd or ovs-fork", r.Mode)
	}
	if r.MAC != "" {
		hw, err := net.ParseMAC(r.MAC)
		if err != nil || len(hw) != 6 {
			return bad("mac", "mac %q: want a 6-byte Ethernet address such as 02:11:22:33:44:55", r.MAC)
		}
		if hw[0]&1 == 1 {
			return bad("mac", "mac %s is a multicast address", r.MAC)
		}
		r.MAC = hw.String()
	}
	if r.MTU != 0 && (r.MTU < 68 || r.MTU > 9978) {
		return bad("mtu", "mtu %d: want 68..9978", r.MTU)
	}
	if r.MaxVQP < 0 || r.MaxVQP > 0x7fff {
		return bad("max_vqp", "max_vqp %d: want 1..32767", r.MaxVQP)
	}
	if r.NumVFs == 0 {
		r.NumVFs = r.VF + 1
	}
	if r.NumVFs <= r.VF {
		return bad("num_vfs", "num_vfs %d does not include vf %d", r.NumVFs, r.VF)
	}
	switch r.Eswitch {
	case "":
		r.Eswitch = EswitchSwitchdev
	case EswitchSwitchdev, EswitchSkip:
	default:
		return bad("eswitch", "eswitch %q: want switchdev or skip", r.Eswitch)
	}
	switch {
	case r.BusDriver == "" && r.Mode == ModeKernel:
		r.BusDriver = BusVhostVDPA
	case r.BusDriver != "" && r.Mode != ModeKernel:
		return bad("bus_driver", "bus_driver applies to mode kernel only")
	case r.BusDriver != "" && r.BusDriver != BusVhostVDPA && r.BusDriver != BusVirtioVDPA:
		return bad("bus_driver", "bus_driver %q: want vhost_vdpa or virtio_vdpa", r.BusDriver)
	}
	if r.VDPAName == "" && r.Mode == ModeKernel {
		r.VDPAName = r.Name
	}
	if r.SocketDir == "" && r.Mode != ModeKernel {
		r.SocketDir = DefaultSocketDir
	}
	if r.SocketDir != "" && !path.IsAbs(r.SocketDir) {
		return bad("socket_dir", "socket_dir %q must be absolute", r.SocketDir)
	}
	if r.HWOffload == nil {
		t := true
		r.HWOffload = &t
	}
	return r, nil
}

// OVSState is what the caller knows about the running Open vSwitch (from OVSDB's Open_vSwitch
// row and Interface table). Running=false means no facts: OVS checks are skipped and reported.
type OVSState struct {
	Running         bool              `json:"running"`
	DPDKInitialized bool              `json:"dpdk_initialized"`
	DPDKVersion     string            `json:"dpdk_version,omitempty"`
	OVSVersion      string            `json:"ovs_version,omitempty"`
	IfaceTypes      []string          `json:"iface_types,omitempty"`
	OtherConfig     map[string]string `json:"other_config,omitempty"`
	Interfaces      []OVSInterface    `json:"interfaces,omitempty"`
}

// OVSInterface is an Interface row, as read or as the plan wants it written.
type OVSInterface struct {
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	Options     map[string]string `json:"options,omitempty"`
	ExternalIDs map[string]string `json:"external_ids,omitempty"`
}

// usesVF reports whether an interface row refers to VF index vf of pf (PCI address) or to the
// VF's own address: representor devargs in either spelling, the fork's accelerator devargs, or
// this library's own external_ids.
func (i OVSInterface) usesVF(pf, vfAddr string, vf int) bool {
	if i.Options["vdpa-accelerator-devargs"] == vfAddr || i.ExternalIDs["vdpa-vf"] == vfAddr {
		return vfAddr != ""
	}
	dev, args, ok := strings.Cut(i.Options["dpdk-devargs"], ",")
	if !ok || dev != pf {
		return false
	}
	return slices.Contains(representorVFs(args), vf)
}

// representorVFs lists the VF indexes named by the representor devarg in DPDK's spellings:
// representor=vf3, representor=[2], representor=[0-3], representor=[1,4],
// representor=pf0vf[0-2] (the controller/PF prefix is ignored: the caller matched the PF).
func representorVFs(args string) []int {
	_, v, ok := strings.Cut(args, "representor=")
	if !ok {
		return nil
	}
	if strings.HasPrefix(v, "[") || strings.Contains(strings.SplitN(v, ",", 2)[0], "[") {
		v, _, _ = strings.Cut(v, "]")
	} else {
		v, _, _ = strings.Cut(v, ",")
	}
	if i := strings.LastIndex(v, "vf"); i >= 0 {
		v = v[i+2:]
	}
	var out []int
	for _, part := range strings.Split(strings.Trim(v, "[]"), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for n := a; n <= b && n-a < 4096; n++ {
			out = append(out, n)
		}
	}
	return out
}

func (r Request) String() string {
	return fmt.Sprintf("%s (pf %s vf %d, %s)", r.Name, r.PF, r.VF, r.Mode)
}
