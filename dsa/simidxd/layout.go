package simidxd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Kernel defaults and constants (drivers/dma/idxd/idxd.h, registers.h).
const (
	wqDefaultMaxBatch = 32      // WQ_DEFAULT_MAX_BATCH
	wqDefaultMaxXfer  = 2097152 // WQ_DEFAULT_MAX_XFER (SZ_2M)
	wqDefaultSize     = 16      // WQ_DEFAULT_QUEUE_DEPTH, given to a typed WQ of size 0 at enable
	wqNameSize        = 1024    // WQ_NAME_SIZE
	driverNameSize    = 128     // DRIVER_NAME_SIZE
	maxPriority       = 15      // IDXD_MAX_PRIORITY
	enqcmdsRetries    = 32      // IDXD_ENQCMDS_RETRIES
	maxEnqcmdsRetries = 64      // IDXD_ENQCMDS_MAX_RETRIES
	maxReadBuffers    = 96      // SPR DSA's read buffers (illustrative)
	cdevMajor         = 236     // dynamic major of the dsa char devices (illustrative)
	portalSize        = 4096    // one WQ portal page, what DPDK mmaps
)

// Illustrative SPR capability values (op_cap: DSA 1.0 operations 0x00-0x09, 0x10-0x15, 0x20).
const (
	sprVersion = "0x100"
	sprOpCap   = "00000000,00000000,00000000,00000000,00000000,00000000,00000001,003f03ff"
	sprGenCap  = "0x40915f0107"
	sprErrors  = "0x0000000000000000 0x0000000000000000 0x0000000000000000 0x0000000000000000"
	pciClass   = "0x088000"
	unsetOverr = "(null)"
	idxdDriver = "idxd"
	vfioDriver = "vfio-pci"
)

// Write lays out a simulated host of variant v under dir, which must be empty or absent: the
// sysfs entries of its DSA devices (PCI functions bound to idxd, the dsa bus with its devices
// and drivers, IOMMU groups), dev/dsa/ and dev/vfio/vfio, and the simulator's own .simidxd
// directory. Variant Busy is brought to its enabled state through the simulated kernel itself.
func Write(dir string, v Variant) error {
	v, err := ParseVariant(string(v))
	if err != nil {
		return err
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("simidxd: %s is not empty: Write needs an empty or absent directory", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("simidxd: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, stateDir), 0o755); err != nil {
		return fmt.Errorf("simidxd: %w", err)
	}
	sp := specFor(v)
	b, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return fmt.Errorf("simidxd: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, stateDir, "spec.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("simidxd: %w", err)
	}
	s, err := Open(dir)
	if err != nil {
		return err
	}
	if err := s.layout(); err != nil {
		return fmt.Errorf("simidxd: write %s: %w", dir, err)
	}
	if v == Busy {
		return s.makeBusy()
	}
	return nil
}

// Ensure opens the simulated host in dir, writing variant v there first when dir is empty or
// absent — what a --simulate mode run repeatedly over one directory wants, since the state of
// earlier runs lives in the files. It fails when dir holds another variant or something else.
func Ensure(dir string, v Variant) (*Sim, error) {
	v, err := ParseVariant(string(v))
	if err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(dir); errors.Is(err, fs.ErrNotExist) || (err == nil && len(ents) == 0) {
		if err := Write(dir, v); err != nil {
			return nil, err
		}
	}
	s, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if s.Variant() != v {
		return nil, fmt.Errorf("simidxd: %s holds variant %q, not %q: use another directory or empty it", dir, s.Variant(), v)
	}
	return s, nil
}

// layout writes the machine-wide entries and every device bound to idxd.
func (s *Sim) layout() error {
	w := &treeWriter{s: s}
	w.dir("dev/dsa")
	w.file("dev/vfio/vfio", "", 0o666)
	drivers := []string{"idxd", "user", "dmaengine"}
	if s.spec.OldKernel {
		drivers = []string{"dsa"}
	}
	for _, drv := range drivers {
		w.file("sys/bus/dsa/drivers/"+drv+"/bind", "", 0o200)
		w.file("sys/bus/dsa/drivers/"+drv+"/unbind", "", 0o200)
	}
	w.dir("sys/bus/dsa/devices")
	for _, drv := range []string{idxdDriver, vfioDriver} {
		for _, f := range []string{"bind", "unbind", "new_id"} {
			w.file("sys/bus/pci/drivers/"+drv+"/"+f, "", 0o200)
		}
	}
	for i := range s.spec.Devices {
		d := &s.spec.Devices[i]
		p := d.pciDir()
		w.attr(p+"/vendor", d.Vendor, 0o444)
		w.attr(p+"/device", d.Device, 0o444)
		w.attr(p+"/class", pciClass, 0o444)
		w.attr(p+"/numa_node", strconv.Itoa(d.NUMA), 0o444)
		w.attr(p+"/driver_override", unsetOverr, 0o644)
		group := "sys/kernel/iommu_groups/" + strconv.Itoa(d.IOMMUGroup)
		w.link(p+"/iommu_group", group)
		w.link(group+"/devices/"+d.BDF, p)
		w.link("sys/bus/pci/devices/"+d.BDF, p)
		if w.err == nil {
			w.err = s.pciAttach(d, idxdDriver)
		}
	}
	return w.err
}

// layoutDSA creates dsaN with its WQs, engines and groups in their boot state and links them on
// the dsa bus: what the idxd PCI driver's probe registers.
func (s *Sim) layoutDSA(d *devSpec) error {
	w := &treeWriter{s: s}
	p := d.dir()
	for _, a := range []struct {
		name, value string
		mode        fs.FileMode
	}{
		{"version", sprVersion, 0o444},
		{"max_groups", strconv.Itoa(d.MaxGroups), 0o444},
		{"max_work_queues", strconv.Itoa(d.MaxWQs), 0o444},
		{"max_work_queues_size", strconv.Itoa(d.MaxWQSize), 0o444},
		{"max_engines", strconv.Itoa(d.MaxEngines), 0o444},
		{"numa_node", strconv.Itoa(d.NUMA), 0o444},
		{"max_batch_size", strconv.Itoa(d.MaxBatch), 0o444},
		{"max_transfer_size", strconv.FormatUint(d.MaxTransfer, 10), 0o444},
		{"op_cap", sprOpCap, 0o444},
		{"gen_cap", sprGenCap, 0o444},
		{"configurable", boolAttr(d.Configurable), 0o444},
		{"clients", "0", 0o444},
		{"pasid_enabled", boolAttr(d.PASID), 0o444},
		{"state", "disabled", 0o444},
		{"errors", sprErrors, 0o444},
		{"max_tokens", strconv.Itoa(maxReadBuffers), 0o444},
		{"max_read_buffers", strconv.Itoa(maxReadBuffers), 0o444},
		{"token_limit", "0", 0o644},
		{"read_buffer_limit", "0", 0o644},
		{"cdev_major", strconv.Itoa(cdevMajor), 0o444},
		{"cmd_status", "0", 0o644},
	} {
		w.attr(p+"/"+a.name, a.value, a.mode)
	}
	w.link(p+"/subsystem", "sys/bus/dsa")
	w.link("sys/bus/dsa/devices/"+d.name(), p)
	for i := range d.MaxWQs {
		q := d.subDir("wq", i)
		for _, a := range s.wqAttrs() {
			w.attr(q+"/"+a.name, a.value, a.mode)
		}
		w.file(q+"/cdev_minor", "", 0o444)
		w.link(q+"/subsystem", "sys/bus/dsa")
		w.link("sys/bus/dsa/devices/"+d.sub("wq", i), q)
	}
	for i := range d.MaxEngines {
		e := d.subDir("engine", i)
		w.attr(e+"/group_id", "-1", 0o644)
		w.link(e+"/subsystem", "sys/bus/dsa")
		w.link("sys/bus/dsa/devices/"+d.sub("engine", i), e)
	}
	for i := range d.MaxGroups {
		g := d.subDir("group", i)
		w.file(g+"/engines", "", 0o444)
		w.file(g+"/work_queues", "", 0o444)
		for _, a := range groupAttrs() {
			w.attr(g+"/"+a.name, a.value, 0o644)
		}
		w.link(g+"/subsystem", "sys/bus/dsa")
		w.link("sys/bus/dsa/devices/"+d.sub("group", i), g)
	}
	return w.err
}

type attrDef struct {
	name, value string
	mode        fs.FileMode
}

// wqAttrs are a WQ's attributes at boot, cdev_minor aside (empty: no character device).
func (s *Sim) wqAttrs() []attrDef {
	a := []attrDef{
		{"clients", "0", 0o444},
		{"state", "disabled", 0o444},
		{"group_id", "-1", 0o644},
		{"mode", "shared", 0o644},
		{"size", "0", 0o644},
		{"priority", "0", 0o644},
		{"block_on_fault", "0", 0o644},
		{"threshold", "0", 0o644},
		{"type", "none", 0o644},
		{"name", "", 0o644},
		{"max_transfer_size", strconv.Itoa(wqDefaultMaxXfer), 0o644},
		{"max_batch_size", strconv.Itoa(wqDefaultMaxBatch), 0o644},
	}
	if !s.spec.OldKernel {
		a = append(a,
			attrDef{"ats_disable", "0", 0o644},
			attrDef{"occupancy", "0", 0o444},
			attrDef{"enqcmds_retries", strconv.Itoa(enqcmdsRetries), 0o644},
			attrDef{"driver_name", "", 0o644})
	}
	return a
}

// groupAttrs are a group's writable attributes at boot (SPR: DSA 1.0, traffic classes 1).
func groupAttrs() []attrDef {
	return []attrDef{
		{"use_token_limit", "0", 0o644},
		{"use_read_buffer_limit", "0", 0o644},
		{"tokens_allowed", "0", 0o644},
		{"read_buffers_allowed", "0", 0o644},
		{"tokens_reserved", "0", 0o644},
		{"read_buffers_reserved", "0", 0o644},
		{"traffic_class_a", "1", 0o644},
		{"traffic_class_b", "1", 0o644},
	}
}

func boolAttr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// treeWriter writes entries until the first error, which it keeps.
type treeWriter struct {
	s   *Sim
	err error
}

func (w *treeWriter) dir(p string) {
	if w.err == nil {
		w.err = os.MkdirAll(w.s.host(p), 0o755)
	}
}

// file creates a new file directly: the tree is being built under the lock (or before anyone
// opened it), so there is nothing to replace atomically.
func (w *treeWriter) file(p, content string, mode fs.FileMode) {
	if w.err != nil {
		return
	}
	hp := w.s.host(p)
	if w.err = os.MkdirAll(filepath.Dir(hp), 0o755); w.err == nil {
		if w.err = os.WriteFile(hp, []byte(content), mode); w.err == nil {
			w.err = os.Chmod(hp, mode)
		}
	}
}

func (w *treeWriter) attr(p, value string, mode fs.FileMode) { w.file(p, value+"\n", mode) }

func (w *treeWriter) link(p, target string) {
	if w.err == nil {
		w.err = w.s.link(p, target)
	}
}

// makeBusy configures and enables dsa0 as another application would have, through the
// simulated kernel's own rules.
func (s *Sim) makeBusy() error {
	const dev = "sys/bus/dsa/devices/"
	steps := []struct{ p, v string }{
		{dev + "engine0.0/group_id", "0"},
		{dev + "wq0.0/group_id", "0"},
		{dev + "wq0.0/mode", "dedicated"},
		{dev + "wq0.0/type", "user"},
		{dev + "wq0.0/name", "app1"},
		{dev + "wq0.0/priority", "10"},
		{dev + "wq0.0/size", "16"},
		{dev + "wq0.0/driver_name", "user"},
		{dev + "wq0.1/group_id", "0"},
		{dev + "wq0.1/mode", "dedicated"},
		{dev + "wq0.1/type", "kernel"},
		{dev + "wq0.1/name", "dmaengine"},
		{dev + "wq0.1/priority", "10"},
		{dev + "wq0.1/size", "16"},
		{dev + "wq0.1/driver_name", "dmaengine"},
		{"sys/bus/dsa/drivers/idxd/bind", "dsa0"},
		{"sys/bus/dsa/drivers/user/bind", "wq0.0"},
		{"sys/bus/dsa/drivers/dmaengine/bind", "wq0.1"},
	}
	for _, st := range steps {
		if err := s.WriteFile(st.p, st.v); err != nil {
			return fmt.Errorf("simidxd: busy variant: %w", err)
		}
	}
	return s.SetClients("wq0.0", 2)
}

// lookup parses a dsa bus device name ("dsa0", "wq0.3", "engine0.1", "group0.0") and finds its
// device; kind is "dsa", "wq", "engine" or "group", idx the sub-device index (-1 for dsa).
func (s *Sim) lookup(name string) (d *devSpec, kind string, idx int) {
	var rest string
	for _, k := range []string{"engine", "group", "dsa", "wq"} {
		if r, ok := strings.CutPrefix(name, k); ok {
			kind, rest = k, r
			break
		}
	}
	if kind == "" {
		return nil, "", 0
	}
	devID, sub := rest, "-1"
	if kind != "dsa" {
		var ok bool
		if devID, sub, ok = strings.Cut(rest, "."); !ok {
			return nil, "", 0
		}
	}
	id, err1 := strconv.Atoi(devID)
	idx, err2 := strconv.Atoi(sub)
	if err1 != nil || err2 != nil || strconv.Itoa(id) != devID || strconv.Itoa(idx) != sub {
		return nil, "", 0
	}
	for i := range s.spec.Devices {
		if dd := &s.spec.Devices[i]; dd.ID == id {
			limit := map[string]int{"dsa": 0, "wq": dd.MaxWQs, "engine": dd.MaxEngines, "group": dd.MaxGroups}[kind]
			if kind != "dsa" && (idx < 0 || idx >= limit) {
				return nil, "", 0
			}
			return dd, kind, idx
		}
	}
	return nil, "", 0
}
