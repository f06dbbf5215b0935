package dsa

import (
	"fmt"
	"regexp"
	"strings"
)

// Owner is the account that must be able to open /dev/dsa/wqX.Y (the user ovs-vswitchd runs as).
type Owner struct {
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	Name string `json:"name,omitempty"`
}

// Request is the configuration to make true. OVSUser, when set, gets the work queues' device
// nodes (owner and mode 0660). AllowReconfigure lets Apply unbind an enabled device whose
// configuration differs (never one with clients).
// FilePrefix is DPDK's --file-prefix, recorded by Normalize: Plan adopts existing work queues
// only when DPDK will take their names.
type Request struct {
	Devices          []DeviceRequest `json:"devices"`
	OVSUser          *Owner          `json:"ovsUser,omitempty"`
	AllowReconfigure bool            `json:"allowReconfigure,omitempty"`
	FilePrefix       string          `json:"filePrefix,omitempty"`
}

// DeviceRequest is one device: Device is "dsaN" or a PCI address (vfio-pci needs the PCI
// address: the dsaN name goes away with idxd); Driver "idxd" (kernel work queues DPDK opens
// through /dev/dsa) or "vfio-pci" (DPDK drives the whole device). Engines is how many engines go
// into group 0 (0: all). NUMA, when set, is the node the device is expected on (a warning
// otherwise).
type DeviceRequest struct {
	Device  string    `json:"dsa"`
	Driver  string    `json:"driver,omitempty"`
	WQs     WQRequest `json:"wqs"`
	Engines int       `json:"engines,omitempty"`
	NUMA    *int      `json:"numa,omitempty"`
}

// WQRequest is the work queues of one device: Count queues wqD.0..wqD.Count-1 of Mode, each of
// Size descriptors (0: an equal share of max_work_queues_size), Priority 1..15, MaxBatchSize
// (0: the device's maximum; larger values are clamped to it), named "<NamePrefix>_wqD.Q". With
// vfio-pci, Count is DPDK's max_queues and the other fields do not apply.
type WQRequest struct {
	Count        int    `json:"count,omitempty"`
	Mode         string `json:"mode,omitempty"`
	Size         int    `json:"size,omitempty"`
	Priority     int    `json:"priority,omitempty"`
	MaxBatchSize int    `json:"maxBatchSize,omitempty"`
	ATSDisable   bool   `json:"atsDisable,omitempty"`
	NamePrefix   string `json:"namePrefix,omitempty"`
}

// Driver choices and defaults.
const (
	DriverIDXD       = "idxd"
	DriverVFIO       = "vfio-pci"
	ModeDedicated    = "dedicated"
	DefaultPriority  = 10
	DefaultPrefix    = "dpdk"
	defaultRTEPrefix = "rte" // DPDK's runtime directory name when no --file-prefix is given
	// maxWQNameLen is the longest work queue name DPDK reads whole (a 64-byte buffer with its NUL).
	maxWQNameLen = 63
	// The longest "_wqD.Q" suffix: D < maxDevices, Q < maxWQsPerDev.
	maxSuffixLen = len("_wq63.255")
)

var reNamePrefix = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Normalize fills defaults (driver idxd, one dedicated work queue of priority 10 named with the
// "dpdk" prefix; size and engines are settled at plan time) and checks bounds. filePrefix is
// DPDK's --file-prefix ("" when none). Failures are *Error with CodeInvalidRequest (Field names
// the configuration field) or CodeNamePrefix.
func (r *Request) Normalize(filePrefix string) error {
	if len(r.Devices) > maxDevices {
		return invalid("", "devices", "%d devices requested; a host has at most %d DSA devices", len(r.Devices), maxDevices)
	}
	if r.OVSUser != nil && (r.OVSUser.UID < 0 || r.OVSUser.GID < 0) {
		return invalid("", "ovsUser", "uid %d gid %d: ids must not be negative", r.OVSUser.UID, r.OVSUser.GID)
	}
	r.FilePrefix = filePrefix
	seen := map[string]bool{}
	for i := range r.Devices {
		d := &r.Devices[i]
		field := fmt.Sprintf("devices[%d]", i)
		d.Device = strings.TrimSpace(d.Device)
		switch {
		case reDevice.MatchString(d.Device):
		case reBDF.MatchString(strings.ToLower(d.Device)):
			d.Device = strings.ToLower(d.Device)
		default:
			return invalid(d.Device, field+".dsa", "%q is neither a DSA device name (dsa0) nor a PCI address (0000:6a:01.0)", d.Device)
		}
		if seen[d.Device] {
			return invalid(d.Device, field+".dsa", "device %s is listed twice", d.Device)
		}
		seen[d.Device] = true
		if d.Driver == "" {
			d.Driver = DriverIDXD
		}
		switch d.Driver {
		case DriverIDXD:
		case DriverVFIO:
			if !reBDF.MatchString(d.Device) {
				return invalid(d.Device, field+".dsa", "driver vfio-pci needs the device's PCI address (0000:6a:01.0): its dsaN name disappears once idxd lets go of it; `dsa --detect` lists both")
			}
		default:
			return invalid(d.Device, field+".driver", "driver %q: use idxd (kernel work queues) or vfio-pci (DPDK drives the device)", d.Driver)
		}
		if d.NUMA != nil && (*d.NUMA < 0 || *d.NUMA > 1023) {
			return invalid(d.Device, field+".numa", "NUMA node %d is outside 0..1023", *d.NUMA)
		}
		if d.Engines < 0 || d.Engines > maxEnginesDev {
			return invalid(d.Device, field+".engines", "%d engines: use 1..%d, or 0 for all the device has", d.Engines, maxEnginesDev)
		}
		if err := d.WQs.normalize(d.Device, field+".wqs", filePrefix); err != nil {
			return err
		}
	}
	return nil
}

func (w *WQRequest) normalize(dev, field, filePrefix string) error {
	if w.Count == 0 {
		w.Count = 1
	}
	if w.Count < 1 || w.Count > maxWQsPerDev {
		return invalid(dev, field+".count", "%d work queues: use 1..%d (the device's max_work_queues is checked when planning)", w.Count, maxWQsPerDev)
	}
	if w.Mode == "" {
		w.Mode = ModeDedicated
	}
	if w.Mode != ModeDedicated {
		return invalid(dev, field+".mode", "mode %q: DPDK's idxd driver submits with MOVDIR64B, which only dedicated work queues accept; use mode dedicated", w.Mode)
	}
	if w.Priority == 0 {
		w.Priority = DefaultPriority
	}
	if w.Priority < 1 || w.Priority > 15 {
		return invalid(dev, field+".priority", "priority %d is outside 1..15", w.Priority)
	}
	if w.Size < 0 || w.Size > maxWQSizeLimit {
		return invalid(dev, field+".size", "size %d: use at least 1 descriptor (0: an equal share of max_work_queues_size)", w.Size)
	}
	if w.MaxBatchSize < 0 || w.MaxBatchSize > 1<<30 {
		return invalid(dev, field+".maxBatchSize", "maxBatchSize %d: use 0 (the device's maximum) or a positive count", w.MaxBatchSize)
	}
	if w.NamePrefix == "" {
		w.NamePrefix = DefaultPrefix
	}
	if !reNamePrefix.MatchString(w.NamePrefix) {
		return invalid(dev, field+".namePrefix", "name prefix %q: use only letters, digits, '_' and '-'", w.NamePrefix)
	}
	if len(w.NamePrefix)+maxSuffixLen > maxWQNameLen {
		return invalid(dev, field+".namePrefix", "name prefix %q is %d bytes; work queue names \"<prefix>_wqD.Q\" must fit DPDK's %d-byte buffer, so use at most %d", w.NamePrefix, len(w.NamePrefix), maxWQNameLen+1, maxWQNameLen-maxSuffixLen)
	}
	if !DPDKAcceptsName(w.NamePrefix+"_wq0.0", filePrefix) {
		e := Errorf(CodeNamePrefix, dev, nil, "work queues named %q would be ignored: DPDK only takes work queues whose names start with \"dpdk_\" or \"<file-prefix>_\" (%s); set namePrefix to \"dpdk\"%s", w.NamePrefix+"_wq…", filePrefixWords(filePrefix), filePrefixFix(filePrefix))
		e.Field = field + ".namePrefix"
		return e
	}
	return nil
}

func filePrefixWords(fp string) string {
	if fp == "" {
		return "dpdk-extra has no --file-prefix"
	}
	return "--file-prefix is " + fp
}

func filePrefixFix(fp string) string {
	if fp == "" {
		return ""
	}
	return " or \"" + fp + "\""
}

// DPDKAcceptsName reports whether DPDK's idxd bus takes a user work queue of this name: it must
// start with "dpdk_" or with "<file-prefix>_", where the file prefix is DPDK's runtime directory
// name ("rte" when --file-prefix is not given).
func DPDKAcceptsName(name, filePrefix string) bool {
	if strings.HasPrefix(name, "dpdk_") {
		return true
	}
	if filePrefix == "" {
		filePrefix = defaultRTEPrefix
	}
	return strings.HasPrefix(name, filePrefix+"_")
}

func invalid(obj, field, format string, args ...any) *Error {
	e := Errorf(CodeInvalidRequest, obj, nil, format, args...)
	e.Field = field
	return e
}
