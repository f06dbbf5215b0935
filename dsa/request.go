package dsa

import "errors"

// Owner is the account that must be able to open /dev/dsa/wqX.Y (the user ovs-vswitchd runs as).
type Owner struct {
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	Name string `json:"name,omitempty"`
}

// Request is the configuration to make true. OVSUser, when set, gets the work queues' device
// nodes (owner and mode 0660). AllowReconfigure lets Apply unbind an enabled device whose
// configuration differs (never one with clients).
type Request struct {
	Devices          []DeviceRequest `json:"devices"`
	OVSUser          *Owner          `json:"ovsUser,omitempty"`
	AllowReconfigure bool            `json:"allowReconfigure,omitempty"`
}

// DeviceRequest is one device: Device is "dsaN" or a PCI address; Driver "idxd" (kernel work
// queues DPDK opens through /dev/dsa) or "vfio-pci" (DPDK drives the whole device). Engines is
// how many engines go into group 0 (0: all). NUMA, when set, is the node the device is expected
// on (a warning otherwise).
type DeviceRequest struct {
	Device  string    `json:"dsa"`
	Driver  string    `json:"driver,omitempty"`
	WQs     WQRequest `json:"wqs"`
	Engines int       `json:"engines,omitempty"`
	NUMA    *int      `json:"numa,omitempty"`
}

// WQRequest is the work queues of one device: Count queues wqD.0..wqD.Count-1 of Mode, each of
// Size descriptors (0: an equal share of max_work_queues_size), Priority 1..15, MaxBatchSize
// (0: the device's maximum), named "<NamePrefix>_wqD.Q".
type WQRequest struct {
	Count        int    `json:"count,omitempty"`
	Mode         string `json:"mode,omitempty"`
	Size         int    `json:"size,omitempty"`
	Priority     int    `json:"priority,omitempty"`
	MaxBatchSize int    `json:"maxBatchSize,omitempty"`
	ATSDisable   bool   `json:"atsDisable,omitempty"`
	NamePrefix   string `json:"namePrefix,omitempty"`
}

// Normalize fills defaults and checks bounds. filePrefix is DPDK's --file-prefix ("" when
// none). Failures are *Error with CodeInvalidRequest or CodeNamePrefix.
func (r *Request) Normalize(filePrefix string) error {
	_ = filePrefix
	return errors.New("dsa: Normalize not implemented yet")
}
