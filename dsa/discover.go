package dsa

import (
	"context"
	"errors"
)

// Inventory is what Discover found: whether the dsa bus exists, which of its drivers are
// registered, and every DSA device (idxd-owned ones by their dsaN name, vfio-pci-owned ones by
// their PCI address only).
type Inventory struct {
	BusPresent bool     `json:"bus_present"`
	Drivers    Drivers  `json:"drivers"`
	Devices    []Device `json:"devices"`
}

// Drivers says which drivers /sys/bus/dsa/drivers has. Compat is the single "dsa" driver of
// kernels before 5.19, which binds both devices and work queues.
type Drivers struct {
	IDXD      bool `json:"idxd"`
	User      bool `json:"user"`
	DMAEngine bool `json:"dmaengine"`
	Compat    bool `json:"compat"`
}

// Device is one DSA instance. Name is "dsaN" while the idxd driver owns the PCI function and ""
// when it is bound elsewhere (vfio-pci); BDF is its PCI address, PCIID "8086:0b25", PCIDriver
// the PCI driver bound to it ("idxd", "vfio-pci" or ""). State is the idxd state
// ("enabled"/"disabled"); the Max* fields are the device's capabilities; Clients counts users of
// the device (open work queues, kernel users).
type Device struct {
	Name            string   `json:"name,omitempty"`
	BDF             string   `json:"bdf"`
	PCIID           string   `json:"pci_id"`
	PCIDriver       string   `json:"pci_driver,omitempty"`
	IOMMUGroup      string   `json:"iommu_group,omitempty"`
	State           string   `json:"state,omitempty"`
	NUMA            int      `json:"numa_node"`
	Version         string   `json:"version,omitempty"`
	MaxGroups       int      `json:"max_groups"`
	MaxEngines      int      `json:"max_engines"`
	MaxWQs          int      `json:"max_work_queues"`
	MaxWQSize       int      `json:"max_work_queues_size"`
	MaxBatchSize    int      `json:"max_batch_size"`
	MaxTransferSize uint64   `json:"max_transfer_size"`
	PASIDEnabled    bool     `json:"pasid_enabled"`
	Configurable    bool     `json:"configurable"`
	Clients         int      `json:"clients"`
	Engines         []Engine `json:"engines,omitempty"`
	Groups          []Group  `json:"groups,omitempty"`
	WQs             []WQ     `json:"wqs,omitempty"`
}

// Engine is one engine (engineN.M) and the group it is in (-1: none).
type Engine struct {
	Name    string `json:"name"`
	GroupID int    `json:"group_id"`
}

// Group is one group (groupN.M).
type Group struct {
	Name string `json:"name"`
}

// WQ is one work queue (wqN.M): Mode "dedicated"/"shared", Type "user"/"kernel"/"none", WQName
// its name attribute, DriverName its driver_name attribute ("" when the kernel has none), State
// "enabled"/"disabled". DevNode is "dev/dsa/wqN.M" when the character device exists, else "".
type WQ struct {
	Name            string `json:"name"`
	Mode            string `json:"mode"`
	Type            string `json:"type"`
	WQName          string `json:"wq_name,omitempty"`
	DriverName      string `json:"driver_name,omitempty"`
	State           string `json:"state"`
	Size            int    `json:"size"`
	Priority        int    `json:"priority"`
	GroupID         int    `json:"group_id"`
	MaxBatchSize    int    `json:"max_batch_size"`
	MaxTransferSize uint64 `json:"max_transfer_size"`
	ATSDisable      bool   `json:"ats_disable"`
	Clients         int    `json:"clients"`
	DevNode         string `json:"dev_node,omitempty"`
}

// Discover reads the dsa bus. A machine without /sys/bus/dsa is not an error: the inventory
// says BusPresent=false. Malformed or oversized sysfs content is an error naming the object.
func (h *Host) Discover(ctx context.Context) (*Inventory, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("dsa: Discover not implemented yet")
}
