package dsa

import (
	"context"
	"errors"
)

// Plan is what Apply would do now, device by device, with the warnings, the dpdk-extra
// arguments the configuration needs (vfio-pci devices) and the dmadevs DPDK will see.
type Plan struct {
	Devices   []DevicePlan `json:"devices"`
	Warnings  []Warning    `json:"warnings,omitempty"`
	DPDKExtra []string     `json:"dpdk_extra,omitempty"`
	WQs       []WQRef      `json:"wqs,omitempty"`
}

// DevicePlan is one device's part of a plan. Action is "none" (already as requested), "adopt"
// (an existing configuration DPDK can use is kept as is), "configure" (idxd writes) or "vfio"
// (hand the device to vfio-pci). Steps are the writes in order; Reason says why in words.
type DevicePlan struct {
	Device string `json:"device"`
	Action string `json:"action"`
	Steps  []Step `json:"steps,omitempty"`
	Reason string `json:"reason"`
}

// Step is one change: a sysfs write of Value to Path, or a chown/chmod of the device node Path
// (Value "uid:gid" or the mode in octal), with the reason in words.
type Step struct {
	Path   string `json:"path"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// WQRef is one DMA device DPDK will create: Name is the dmadev name ("wq0.0" for an idxd work
// queue, "0000:6a:01.0-q0" for a vfio-pci queue), Device the DSA device (dsaN or the PCI
// address), NUMA its node.
type WQRef struct {
	Name   string `json:"name"`
	Device string `json:"device"`
	NUMA   int    `json:"numa"`
}

// Plan reads the machine and returns what Apply would do for req, without writing anything.
// req must have been normalized.
func (h *Host) Plan(ctx context.Context, req Request) (*Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("dsa: Plan not implemented yet")
}
