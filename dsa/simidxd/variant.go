package simidxd

import (
	"fmt"
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
