package accelconfig

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/dsa"
)

// FromInventory exports the host's DSA configuration as accel-config would list it: every
// device idxd drives (one handed to vfio-pci has no dsaN name and is left out) with its
// read-only attributes, all its groups, and in each group the work queues and engines whose
// group_id is that group's (unconfigured ones, group -1, are left out). load-config ignores the
// read-only attributes, so the result also loads on a host with the same devices.
func FromInventory(inv *dsa.Inventory) Config {
	var c Config
	if inv == nil {
		return c
	}
	for _, d := range inv.Devices {
		if d.Name == "" {
			continue
		}
		dev := Device{Dev: d.Name, MaxGroups: ptr(d.MaxGroups), MaxWorkQueues: ptr(d.MaxWQs),
			MaxEngines: ptr(d.MaxEngines), WorkQueueSize: ptr(d.MaxWQSize), NUMANode: ptr(d.NUMA),
			State: d.State, MaxBatchSize: ptr(d.MaxBatchSize), MaxTransferSize: ptr(d.MaxTransferSize),
			Configurable: ptr(boolInt(d.Configurable)), PASIDEnabled: ptr(boolInt(d.PASIDEnabled)),
			Clients: ptr(d.Clients)}
		for _, g := range d.Groups {
			gid, ok := childIndex(g.Name)
			group := Group{Dev: g.Name}
			if ok {
				for _, w := range d.WQs {
					if w.GroupID == gid {
						group.WQs = append(group.WQs, fromWQ(w))
					}
				}
				for _, e := range d.Engines {
					if e.GroupID == gid {
						group.Engines = append(group.Engines, Engine{Dev: e.Name, GroupID: ptr(e.GroupID)})
					}
				}
			}
			dev.Groups = append(dev.Groups, group)
		}
		c.Devices = append(c.Devices, dev)
	}
	return c
}

func fromWQ(w dsa.WQ) WQ {
	q := WQ{Dev: w.Name, Mode: w.Mode, Size: ptr(w.Size), GroupID: ptr(w.GroupID), Priority: ptr(w.Priority),
		MaxBatchSize: ptr(w.MaxBatchSize), MaxTransferSize: ptr(w.MaxTransferSize), Type: w.Type,
		Name: w.WQName, DriverName: w.DriverName, Threshold: ptr(w.Threshold),
		ATSDisable: ptr(boolInt(w.ATSDisable)), State: w.State, Clients: ptr(w.Clients)}
	return q
}

func ptr[T any](v T) *T { return &v }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// childIndex returns M of "groupN.M", "wqN.M" or "engineN.M".
func childIndex(name string) (int, bool) {
	sm := reChild.FindStringSubmatch(name)
	if sm == nil {
		return 0, false
	}
	n, err := strconv.Atoi(sm[3])
	return n, err == nil
}

// ToRequest returns the dsa.Request that adopts the configuration c describes, so that
// dsa.Host.Plan finds it already satisfied on a host where it is loaded: nothing to write.
// Each dsaN device with dedicated user work queues (the only ones DPDK's idxd driver opens)
// becomes one idxd DeviceRequest; devices without any (unconfigured, or used by kernel or
// shared work queues) and IAA devices (iaxN) are left out, and so are shared or kernel work
// queues. When the device's DPDK work queues are exactly the ones the dsa library makes
// (wqN.0…wqN.k-1 in group 0, one size, priority, batch size and ATS setting, named
// "<prefix>_wqN.M", engines engineN.0…engineN.e-1 in group 0 and no other), the request
// spells all of that out. Otherwise it asks for as many dedicated work queues (and their
// common size, if they share one) and Plan adopts the enabled ones whose names DPDK takes
// ("dpdk_…" or "<file-prefix>_…"); queues named otherwise (accel-config's profiles use
// "app1"…) cannot be adopted, and Plan says so. The request is not normalized: the caller
// calls Normalize with DPDK's --file-prefix. When no device has a dedicated user work queue
// the error is a dsa *Error with CodeInvalidRequest naming the devices looked at.
func ToRequest(c Config) (dsa.Request, error) {
	var req dsa.Request
	var looked []string
	for _, d := range c.Devices {
		if !strings.HasPrefix(d.Dev, "dsa") {
			continue
		}
		looked = append(looked, d.Dev)
		if dr, ok := deviceRequest(d); ok {
			req.Devices = append(req.Devices, dr)
		}
	}
	if len(req.Devices) == 0 {
		if len(looked) == 0 {
			return dsa.Request{}, dsa.Errorf(dsa.CodeInvalidRequest, "accel-config", nil, "the configuration has no DSA device (dsaN) to adopt")
		}
		return dsa.Request{}, dsa.Errorf(dsa.CodeInvalidRequest, strings.Join(looked, ","), nil, "no dedicated user work queue to adopt: DPDK's idxd driver opens only work queues of type user and mode dedicated")
	}
	return req, nil
}

// dpdkWQ is one work queue DPDK could open, with its index and group.
type dpdkWQ struct {
	WQ
	index, group int
}

// deviceRequest returns the request adopting d's DPDK work queues, false when it has none.
func deviceRequest(d Device) (dsa.DeviceRequest, bool) {
	var wqs []dpdkWQ
	engines := map[int][]int{} // group → engine indices
	for _, g := range d.Groups {
		gid, _ := childIndex(g.Dev)
		for _, w := range g.WQs {
			if w.Type != "user" || w.Mode != dsa.ModeDedicated {
				continue
			}
			idx, _ := childIndex(w.Dev)
			group := gid
			if w.GroupID != nil {
				group = *w.GroupID
			}
			wqs = append(wqs, dpdkWQ{WQ: w, index: idx, group: group})
		}
		for _, e := range g.Engines {
			idx, _ := childIndex(e.Dev)
			group := gid
			if e.GroupID != nil {
				group = *e.GroupID
			}
			engines[group] = append(engines[group], idx)
		}
	}
	if len(wqs) == 0 {
		return dsa.DeviceRequest{}, false
	}
	slices.SortFunc(wqs, func(a, b dpdkWQ) int { return a.index - b.index })
	dr := dsa.DeviceRequest{Device: d.Dev, Driver: dsa.DriverIDXD,
		WQs: dsa.WQRequest{Count: len(wqs), Mode: dsa.ModeDedicated}}
	if s, ok := common(wqs, func(w dpdkWQ) *int { return w.Size }); ok && s >= 1 {
		dr.WQs.Size = s
	}
	if w, e, ok := exact(d.Dev, wqs, engines); ok {
		dr.WQs, dr.Engines = w, e
	}
	return dr, true
}

// common returns the value every work queue has for an attribute, if they all have the same.
func common(wqs []dpdkWQ, get func(dpdkWQ) *int) (int, bool) {
	var v *int
	for _, w := range wqs {
		p := get(w)
		if p == nil || (v != nil && *p != *v) {
			return 0, false
		}
		v = p
	}
	if v == nil {
		return 0, false
	}
	return *v, true
}

// exact returns the full request when the work queues and engines are laid out the way the dsa
// library configures a device.
func exact(dev string, wqs []dpdkWQ, engines map[int][]int) (dsa.WQRequest, int, bool) {
	num := strings.TrimPrefix(dev, "dsa")
	var prefix string
	for i, w := range wqs {
		if w.index != i || w.group != 0 {
			return dsa.WQRequest{}, 0, false
		}
		p, ok := strings.CutSuffix(w.Name, "_wq"+num+"."+strconv.Itoa(i))
		if !ok || p == "" || (i > 0 && p != prefix) {
			return dsa.WQRequest{}, 0, false
		}
		prefix = p
	}
	size, ok1 := common(wqs, func(w dpdkWQ) *int { return w.Size })
	prio, ok2 := common(wqs, func(w dpdkWQ) *int { return w.Priority })
	batch, ok3 := common(wqs, func(w dpdkWQ) *int { return w.MaxBatchSize })
	ats, ok4 := common(wqs, func(w dpdkWQ) *int { return w.ATSDisable })
	if !ok1 || !ok2 || !ok3 || !ok4 || size < 1 || prio < 1 || prio > 15 || batch < 1 || ats < 0 || ats > 1 {
		return dsa.WQRequest{}, 0, false
	}
	for g := range engines {
		if g != 0 {
			return dsa.WQRequest{}, 0, false
		}
	}
	e := slices.Sorted(slices.Values(engines[0]))
	for i, idx := range e {
		if idx != i {
			return dsa.WQRequest{}, 0, false
		}
	}
	if len(e) == 0 {
		return dsa.WQRequest{}, 0, false
	}
	return dsa.WQRequest{Count: len(wqs), Mode: dsa.ModeDedicated, Size: size, Priority: prio,
		MaxBatchSize: batch, ATSDisable: ats == 1, NamePrefix: prefix}, len(e), true
}
