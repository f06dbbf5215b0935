package vdpa

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// PF is a discovered SR-IOV physical function.
type PF struct {
	Addr      string `json:"addr"`
	Vendor    string `json:"vendor"`
	Device    string `json:"device"`
	Driver    string `json:"driver"`
	TotalVFs  int    `json:"total_vfs"`
	NumVFs    int    `json:"num_vfs"`
	Offset    int    `json:"offset"`
	Stride    int    `json:"stride"`
	Autoprobe bool   `json:"autoprobe"`
	NUMANode  int    `json:"numa_node"`
	// Uplink is the PF's own netdev; SwitchID its phys_switch_id; PFNum the N of "pN".
	Uplink   string `json:"uplink,omitempty"`
	SwitchID string `json:"switch_id,omitempty"`
	PFNum    int    `json:"pf_num"`
	// Eswitch is devlink's mode; EswitchError why it could not be read.
	Eswitch      string `json:"eswitch,omitempty"`
	EswitchError string `json:"eswitch_error,omitempty"`
	eswitchErr   error
	VFs          []VF `json:"vfs"`
}

// VF is a discovered virtual function.
type VF struct {
	Index       int      `json:"index"`
	Addr        string   `json:"addr"`
	Driver      string   `json:"driver,omitempty"`
	Netdevs     []string `json:"netdevs,omitempty"`
	Representor string   `json:"representor,omitempty"`
	// MgmtDev is set when the kernel lists pci/<Addr> as a vdpa management device.
	MgmtDev *MgmtDev `json:"mgmtdev,omitempty"`
	// Devices are the vdpa devices parented on this VF.
	Devices []string `json:"vdpa_devices,omitempty"`
}

// Device is a discovered vdpa device.
type Device struct {
	Name string `json:"name"`
	// Parent is the parent device's name (the VF's PCI address for mlx5).
	Parent    string `json:"parent"`
	BusDriver string `json:"bus_driver,omitempty"`
	// Vhost is the vhost-vdpa-N child when bound to vhost_vdpa; CharDev "/dev/vhost-vdpa-N" once
	// the node exists.
	Vhost   string `json:"vhost,omitempty"`
	CharDev string `json:"chardev,omitempty"`
	// Virtio is the virtioM device and Netdev its netdev when bound to virtio_vdpa.
	Virtio string     `json:"virtio,omitempty"`
	Netdev string     `json:"netdev,omitempty"`
	Config *DevConfig `json:"config,omitempty"`
}

// Snapshot is everything the planner needs, read in one go.
type Snapshot struct {
	Release    string          `json:"release"`
	Modules    map[string]bool `json:"modules"`
	BusDrivers []string        `json:"bus_drivers"`
	// Family is nil when the vdpa family is missing; FamilyError says why.
	Family      *Family `json:"family,omitempty"`
	FamilyError string  `json:"family_error,omitempty"`
	familyErr   error
	MgmtDevs    []MgmtDev `json:"mgmtdevs"`
	Devices     []Device  `json:"devices"`
	PF          *PF       `json:"pf,omitempty"`
	devByName   map[string]*Device
}

// Modules the library reports on.
var moduleNames = []string{"mlx5_core", "vdpa", "mlx5_vdpa", "vhost_vdpa", "virtio_vdpa"}

var (
	reUplink = regexp.MustCompile(`^p(\d+)$`)
	reRep    = regexp.MustCompile(`^(?:c\d+)?pf(\d+)vf(\d+)$`)
)

// ResolvePF maps a PF given as a PCI address (long or short form) or a netdev name to its long
// PCI address, failing with PF_NOT_FOUND.
func (h *Host) ResolvePF(pf string) (string, error) {
	if addr, err := NormalizePCI(pf); err == nil {
		if h.exists(pciDev(addr)) {
			return addr, nil
		}
		return "", newErr(CodePFNotFound, addr, nil, "no PCI device %s on this host (lspci -D lists them)", addr)
	}
	// net/<if>/device names the parent; without it, the class link's target ends in
	// <parent>/net/<if>.
	cands := []string{h.linkBase(classNet + "/" + pf + "/device")}
	if t, err := h.fs.ReadLink(classNet + "/" + pf); err == nil {
		cands = append(cands, path.Base(path.Dir(path.Dir(t))))
	}
	for _, c := range cands {
		if addr, err := NormalizePCI(c); err == nil && h.exists(pciDev(addr)) {
			return addr, nil
		}
	}
	return "", newErr(CodePFNotFound, pf, nil, "no PCI device or netdev %q on this host: give the PF as a PCI address (0000:65:00.0) or its netdev name", pf)
}

// ReadPF reads a PF with its VFs and representors. The eswitch mode comes from devlink; failing
// to read it is recorded in the PF, not returned.
func (h *Host) ReadPF(ctx context.Context, addr string) (*PF, error) {
	dir := pciDev(addr)
	if !h.exists(dir) {
		return nil, newErr(CodePFNotFound, addr, nil, "no PCI device %s on this host", addr)
	}
	pf := &PF{Addr: addr, Vendor: h.readString(dir + "/vendor"), Device: h.readString(dir + "/device"),
		Driver: h.linkBase(dir + "/driver"), Autoprobe: h.readString(dir+"/sriov_drivers_autoprobe") != "0"}
	pf.TotalVFs, _ = h.readInt(dir + "/sriov_totalvfs")
	pf.NumVFs, _ = h.readInt(dir + "/sriov_numvfs")
	pf.Offset, _ = h.readInt(dir + "/sriov_offset")
	pf.Stride, _ = h.readInt(dir + "/sriov_stride")
	if n, err := h.readInt(dir + "/numa_node"); err == nil {
		pf.NUMANode = n
	}
	h.readUplink(pf)
	mode, err := h.devlink.EswitchMode(ctx, addr)
	pf.Eswitch, pf.eswitchErr, pf.EswitchError = mode, err, errString(err)
	reps := h.representors(pf)
	for _, name := range h.list(dir) {
		n, ok := strings.CutPrefix(name, "virtfn")
		if !ok {
			continue
		}
		idx, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		vf := VF{Index: idx, Addr: h.linkBase(dir + "/" + name), Representor: reps[idx]}
		vf.Driver = h.linkBase(pciDev(vf.Addr) + "/driver")
		vf.Netdevs = h.list(pciDev(vf.Addr) + "/net")
		pf.VFs = append(pf.VFs, vf)
	}
	slices.SortFunc(pf.VFs, func(a, b VF) int { return a.Index - b.Index })
	return pf, nil
}

// readUplink finds the PF's own netdev and its switch identity.
func (h *Host) readUplink(pf *PF) {
	dir := pciDev(pf.Addr) + "/net"
	for _, n := range h.list(dir) {
		ppn := h.readString(dir + "/" + n + "/phys_port_name")
		m := reUplink.FindStringSubmatch(ppn)
		if m == nil && (pf.Uplink != "" || ppn != "") {
			continue // a representor, or a second netdev without a port name
		}
		pf.Uplink, pf.SwitchID = n, h.readString(dir+"/"+n+"/phys_switch_id")
		if m != nil {
			pf.PFNum, _ = strconv.Atoi(m[1])
			return
		}
	}
}

// representors maps VF index to representor netdev: netdevs sharing the uplink's phys_switch_id
// whose phys_port_name is pf<PFNum>vf<N> or c<C>pf<PFNum>vf<N>.
func (h *Host) representors(pf *PF) map[int]string {
	reps := map[int]string{}
	if pf.SwitchID == "" {
		return reps
	}
	for _, n := range h.list(classNet) {
		base := classNet + "/" + n
		if h.readString(base+"/phys_switch_id") != pf.SwitchID {
			continue
		}
		m := reRep.FindStringSubmatch(h.readString(base + "/phys_port_name"))
		if m == nil || m[1] != strconv.Itoa(pf.PFNum) {
			continue
		}
		idx, _ := strconv.Atoi(m[2])
		reps[idx] = n
	}
	return reps
}

// PFs lists the host's mlx5 SR-IOV physical functions.
func (h *Host) PFs(ctx context.Context) ([]*PF, error) {
	var out []*PF
	for _, addr := range h.list(pciDevices) {
		dir := pciDev(addr)
		if h.readString(dir+"/vendor") != VendorMellanox || !h.exists(dir+"/sriov_totalvfs") || h.exists(dir+"/physfn") {
			continue
		}
		pf, err := h.ReadPF(ctx, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, pf)
	}
	return out, nil
}

// Devices lists the vdpa devices from sysfs, with bus driver, vhost and virtio children and, when
// the kernel reports it, the net configuration.
func (h *Host) Devices(ctx context.Context, fam *Family) []Device {
	var out []Device
	for _, name := range h.list(vdpaDevices) {
		d := Device{Name: name, BusDriver: h.linkBase(vdpaDevices + "/" + name + "/driver")}
		t, err := h.fs.ReadLink(vdpaDevices + "/" + name)
		if err == nil {
			d.Parent = path.Base(path.Dir(t))
		}
		for _, c := range h.list(vdpaDevices + "/" + name) {
			if strings.HasPrefix(c, vhostVDPAPfx) {
				d.Vhost = c
				if h.isCharDev(devDir + "/" + c) {
					d.CharDev = "/" + devDir + "/" + c
				}
			}
		}
		if d.BusDriver == BusVirtioVDPA && d.Parent != "" {
			for _, c := range h.list(pciDev(d.Parent)) {
				if strings.HasPrefix(c, "virtio") {
					d.Virtio = c
					if nets := h.list(pciDev(d.Parent) + "/" + c + "/net"); len(nets) > 0 {
						d.Netdev = nets[0]
					}
				}
			}
		}
		if fam != nil && fam.HasOp(CmdDevConfigGet) {
			if c, err := h.vdpa.DevConfig(ctx, name); err == nil {
				d.Config = &c
			}
		}
		out = append(out, d)
	}
	return out
}

// Snapshot reads the kernel's vdpa state and, when pf is not empty, that PF. It fails only when
// the PF cannot be found; a missing vdpa family is recorded, not returned.
func (h *Host) Snapshot(ctx context.Context, pf string) (*Snapshot, error) {
	s := &Snapshot{Release: h.readString(osRelease), Modules: map[string]bool{}}
	for _, m := range moduleNames {
		s.Modules[m] = h.exists(sysModule + "/" + m)
	}
	s.BusDrivers = h.list(vdpaDrivers)
	fam, err := h.vdpa.Family(ctx)
	if err == nil {
		s.Family = &fam
		s.MgmtDevs, err = h.vdpa.MgmtDevs(ctx)
	}
	s.familyErr, s.FamilyError = err, errString(err)
	s.Devices = h.Devices(ctx, s.Family)
	s.devByName = map[string]*Device{}
	for i := range s.Devices {
		s.devByName[s.Devices[i].Name] = &s.Devices[i]
	}
	if pf == "" {
		return s, nil
	}
	addr, err := h.ResolvePF(pf)
	if err != nil {
		return nil, err
	}
	if s.PF, err = h.ReadPF(ctx, addr); err != nil {
		return nil, err
	}
	for i := range s.PF.VFs {
		vf := &s.PF.VFs[i]
		vf.MgmtDev = s.mgmtDev(vf.Addr)
		for _, d := range s.Devices {
			if d.Parent == vf.Addr {
				vf.Devices = append(vf.Devices, d.Name)
			}
		}
	}
	return s, nil
}

func (s *Snapshot) mgmtDev(vf string) *MgmtDev {
	for i := range s.MgmtDevs {
		if s.MgmtDevs[i].Bus == "pci" && s.MgmtDevs[i].Name == vf {
			return &s.MgmtDevs[i]
		}
	}
	return nil
}

// Device returns the named vdpa device, or nil.
func (s *Snapshot) Device(name string) *Device { return s.devByName[name] }

// noNetlinkErr turns a failure to reach the vdpa family into VDPA_NO_NETLINK and names the
// cause. ENOENT is what generic netlink's CTRL_CMD_GETFAMILY answers for a family nobody
// registered: on a kernel of release 5.12 or later (or an unknown release) that means the vdpa
// module is not loaded, and the fix is to load it with the mlx5 vDPA driver; only a release
// known to be older than 5.12 is told to upgrade. release is the kernel's osrelease ("" when
// unknown).
func noNetlinkErr(err error, release string) *Error {
	if !isErrno(err, syscall.ENOENT) {
		return newErr(CodeNoNetlink, "vdpa", err, "cannot talk to the kernel's vdpa netlink family: %v", err)
	}
	if releaseBefore(release, 5, 12) {
		return newErr(CodeNoNetlink, "vdpa", err,
			"kernel %s has no vdpa netlink family, which arrived in 5.12: upgrade the kernel (then modprobe vdpa mlx5_vdpa vhost_vdpa)", release)
	}
	kernel := "the kernel"
	if release != "" {
		kernel = "kernel " + release
	}
	return newErr(CodeNoNetlink, "vdpa", err,
		"%s has no vdpa netlink family (genetlink CTRL_CMD_GETFAMILY \"vdpa\": ENOENT): the vdpa module is not loaded; load it and the mlx5 vDPA driver with 'modprobe vdpa mlx5_vdpa vhost_vdpa'", kernel)
}

// releaseBefore reports whether the kernel release ("6.1.0-18-amd64") is known to be older
// than maj.min; an empty or unparseable release is not.
func releaseBefore(release string, maj, min int) bool {
	var a, b int
	if _, err := fmt.Sscanf(release, "%d.%d", &a, &b); err != nil {
		return false
	}
	return a < maj || a == maj && b < min
}

func (s *Snapshot) vf(index int) *VF {
	if s.PF == nil {
		return nil
	}
	for i := range s.PF.VFs {
		if s.PF.VFs[i].Index == index {
			return &s.PF.VFs[i]
		}
	}
	return nil
}

func (pf *PF) String() string { return fmt.Sprintf("PF %s", pf.Addr) }
