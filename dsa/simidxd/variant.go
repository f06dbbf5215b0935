package simidxd

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Variant names a simulated host. The zero value means SPR.
type Variant string

// The variants Write knows.
const (
	// SPR is a 4th-gen Xeon host with one DSA, dsa0 at 0000:6a:01.0 (8086:0b25, NUMA node 0),
	// max_groups 4, max_engines 4, max_work_queues 8, max_work_queues_size 128, max_batch_size
	// 1024, max_transfer_size 2097152, PASID on, disabled and configurable, on a 6.7+ kernel (drivers
	// idxd, user and dmaengine; WQs have driver_name).
	SPR Variant = "spr"
	// OldKernel is SPR on a 5.10-era kernel: a single "dsa" driver and no driver_name, ats_disable,
	// enqcmds_retries or occupancy attributes.
	OldKernel Variant = "old-kernel"
	// NoPASID is SPR without IOMMU scalable mode: pasid_enabled 0, so user WQs cannot be enabled.
	NoPASID Variant = "no-pasid"
	// Busy is SPR with dsa0 already enabled by another user: engine0.0 and wq0.0 (user,
	// dedicated, name "app1", size 16, /dev/dsa/wq0.0 held open by 2 clients) and wq0.1 (kernel,
	// bound to dmaengine, size 16) in group0.0.
	Busy Variant = "busy"
	// SmallWQBudget is SPR with max_work_queues_size 16.
	SmallWQBudget Variant = "small-wq-budget"
	// TwoNUMA is a two-socket host: dsa0 at 0000:6a:01.0 on NUMA node 0 and dsa2 at
	// 0000:e7:01.0 on NUMA node 1, otherwise as SPR.
	TwoNUMA Variant = "two-numa"
)

// Variants lists every variant, SPR first.
func Variants() []Variant {
	return []Variant{SPR, OldKernel, NoPASID, Busy, SmallWQBudget, TwoNUMA}
}

// ParseVariant accepts a variant's name; "" means SPR.
func ParseVariant(s string) (Variant, error) {
	if s == "" {
		return SPR, nil
	}
	if v := Variant(s); slices.Contains(Variants(), v) {
		return v, nil
	}
	names := make([]string, 0, len(Variants()))
	for _, v := range Variants() {
		names = append(names, string(v))
	}
	return "", fmt.Errorf("simidxd: unknown variant %q: use one of %s", s, strings.Join(names, ", "))
}

// spec is a simulated host's immutable description, stored in .simidxd/spec.json by Write.
type spec struct {
	Variant   Variant   `json:"variant"`
	OldKernel bool      `json:"old_kernel"`
	Devices   []devSpec `json:"devices"`
}

// devSpec is one DSA PCI function and its idxd capabilities.
type devSpec struct {
	ID           int    `json:"id"`      // N of dsaN
	BDF          string `json:"bdf"`     // 0000:6a:01.0
	PCIRoot      string `json:"root"`    // pci0000:6a
	Vendor       string `json:"vendor"`  // 0x8086
	Device       string `json:"device"`  // 0x0b25
	NUMA         int    `json:"numa"`    // numa_node
	IOMMUGroup   int    `json:"iommu"`   // iommu group number
	MaxGroups    int    `json:"groups"`  // max_groups
	MaxEngines   int    `json:"engines"` // max_engines
	MaxWQs       int    `json:"wqs"`     // max_work_queues
	MaxWQSize    int    `json:"wq_size"` // max_work_queues_size
	MaxBatch     int    `json:"batch"`   // max_batch_size
	MaxTransfer  uint64 `json:"xfer"`    // max_transfer_size
	PASID        bool   `json:"pasid"`   // pasid_enabled
	Configurable bool   `json:"configurable"`
}

func (d *devSpec) name() string { return fmt.Sprintf("dsa%d", d.ID) }

func (d *devSpec) pciDir() string { return "sys/devices/" + d.PCIRoot + "/" + d.BDF }

func (d *devSpec) dir() string { return d.pciDir() + "/" + d.name() }

func (d *devSpec) sub(kind string, i int) string { return fmt.Sprintf("%s%d.%d", kind, d.ID, i) }

func (d *devSpec) subDir(kind string, i int) string { return d.dir() + "/" + d.sub(kind, i) }

func sprDevice(id int, bdf string, numa, group int) devSpec {
	return devSpec{ID: id, BDF: bdf, PCIRoot: "pci" + bdf[:7], Vendor: "0x8086", Device: "0x0b25",
		NUMA: numa, IOMMUGroup: group, MaxGroups: 4, MaxEngines: 4, MaxWQs: 8, MaxWQSize: 128,
		MaxBatch: 1024, MaxTransfer: 2097152, PASID: true, Configurable: true}
}

func specFor(v Variant) spec {
	s := spec{Variant: v, Devices: []devSpec{sprDevice(0, "0000:6a:01.0", 0, 1)}}
	switch v {
	case OldKernel:
		s.OldKernel = true
	case NoPASID:
		s.Devices[0].PASID = false
	case SmallWQBudget:
		s.Devices[0].MaxWQSize = 16
	case TwoNUMA:
		s.Devices = append(s.Devices, sprDevice(2, "0000:e7:01.0", 1, 2))
	}
	return s
}

// check bounds a spec read back from disk, so a damaged file cannot make the simulator loop
// over absurd counts or build paths from arbitrary strings.
func (s *spec) check() error {
	if _, err := ParseVariant(string(s.Variant)); err != nil {
		return err
	}
	if len(s.Devices) == 0 || len(s.Devices) > 16 {
		return fmt.Errorf("%d devices, want 1..16", len(s.Devices))
	}
	bdf := regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	hex := regexp.MustCompile(`^0x[0-9a-f]{4}$`)
	ids := map[int]bool{}
	for _, d := range s.Devices {
		switch {
		case d.ID < 0 || d.ID > 255 || ids[d.ID]:
			return fmt.Errorf("device id %d: want a unique 0..255", d.ID)
		case !bdf.MatchString(d.BDF) || d.PCIRoot != "pci"+d.BDF[:7]:
			return fmt.Errorf("dsa%d: bad PCI address %q or root %q", d.ID, d.BDF, d.PCIRoot)
		case !hex.MatchString(d.Vendor) || !hex.MatchString(d.Device):
			return fmt.Errorf("dsa%d: bad PCI ID %q:%q", d.ID, d.Vendor, d.Device)
		case d.MaxGroups < 1 || d.MaxGroups > 64 || d.MaxEngines < 1 || d.MaxEngines > 64 || d.MaxWQs < 1 || d.MaxWQs > 64:
			return fmt.Errorf("dsa%d: groups/engines/WQs %d/%d/%d, want 1..64 each", d.ID, d.MaxGroups, d.MaxEngines, d.MaxWQs)
		case d.MaxWQSize < 1 || d.MaxWQSize > 1<<16 || d.MaxBatch < 1 || d.MaxBatch > 1<<16 || d.MaxTransfer < 1 || d.MaxTransfer > 1<<40:
			return fmt.Errorf("dsa%d: WQ size, batch or transfer limit out of range", d.ID)
		case d.NUMA < -1 || d.NUMA > 1024 || d.IOMMUGroup < 0 || d.IOMMUGroup > 1<<20:
			return fmt.Errorf("dsa%d: NUMA node %d or IOMMU group %d out of range", d.ID, d.NUMA, d.IOMMUGroup)
		}
		ids[d.ID] = true
	}
	return nil
}
