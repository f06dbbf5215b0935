package api

import (
	"fmt"
	"strings"

	"github.com/ovsplane/ovsplane/model/limits"
)

// The bounds and text rules of package limits, applied to plugins' answers with the same
// functions the configuration file, the API and vsctl use: a plugin cannot write what an
// operator could not. Problems are added to the answer's problem list under the answer's field
// path (ports[0].interfaces[2].options), with the limits message naming the object and the fix.

// addLimit records err (nil is ignored) at field f, one problem per joined error.
func (ps *problems) addLimit(f string, err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			ps.addLimit(f, e)
		}
		return
	}
	*ps = append(*ps, Problem{Field: f, Message: err.Error()})
}

// limitAttachment checks the ports of an Attachment: at most limits.MaxObjectsPerBatch ports
// and interfaces in all (their interfaces are then not checked one by one), names
// (limits.CheckName, CheckInterfaceName), interfaces per port, and every map column.
func limitAttachment(ps *problems, a Attachment) {
	n := len(a.Ports)
	for _, p := range a.Ports {
		n += len(p.Interfaces)
	}
	if n > limits.MaxObjectsPerBatch {
		ps.add("ports", "%d ports and interfaces, more than %d (limits.MaxObjectsPerBatch); write fewer objects per port", n, limits.MaxObjectsPerBatch)
		return
	}
	for i, p := range a.Ports {
		f := fmt.Sprintf("ports[%d]", i)
		port := limits.Object(limits.Port, p.Name)
		if p.Name != "" {
			ps.addLimit(f+".name", limits.CheckName(limits.Port, p.Name))
		}
		if p.Bridge != "" {
			ps.addLimit(f+".bridge", limits.CheckName(limits.Bridge, p.Bridge))
		}
		ps.addLimit(f+".interfaces", limits.CheckInterfaces(port, len(p.Interfaces)))
		ps.addLimit(f+".other_config", limits.CheckMap(port, "other_config", p.OtherConfig))
		ps.addLimit(f+".external_ids", limits.CheckMap(port, "external_ids", p.ExternalIDs))
		if len(p.Interfaces) > limits.MaxInterfacesPerPort {
			continue
		}
		size := len(p.Name) + limits.MapBytes(p.OtherConfig) + limits.MapBytes(p.ExternalIDs)
		for _, ifc := range p.Interfaces {
			size += len(ifc.Name) + len(ifc.Type) + limits.MapBytes(ifc.Options) + limits.MapBytes(ifc.OtherConfig) + limits.MapBytes(ifc.ExternalIDs)
		}
		ps.addLimit(f, limits.CheckPortBytes(port, size))
		for j, ifc := range p.Interfaces {
			fi := fmt.Sprintf("%s.interfaces[%d]", f, j)
			in := limits.Object(limits.Interface, ifc.Name)
			if ifc.Name != "" {
				ps.addLimit(fi+".name", limits.CheckInterfaceName(ifc.Name, ifc.Type))
			}
			ps.addLimit(fi+".type", limits.CheckText(in, "type", ifc.Type))
			ps.addLimit(fi+".options", limits.CheckMap(in, "options", ifc.Options))
			ps.addLimit(fi+".other_config", limits.CheckMap(in, "other_config", ifc.OtherConfig))
			ps.addLimit(fi+".external_ids", limits.CheckMap(in, "external_ids", ifc.ExternalIDs))
		}
	}
}

// limitGlobalConfig checks a contribution: other_config as a map column of Open_vSwitch
// (the empty key is left to ValidateGlobalConfig's own message), and every dpdk-extra fragment
// as a value.
func limitGlobalConfig(ps *problems, g GlobalConfig) {
	m := g.OtherConfig
	if _, empty := m[""]; empty {
		m = make(map[string]string, len(g.OtherConfig))
		for k, v := range g.OtherConfig {
			if k != "" {
				m[k] = v
			}
		}
	}
	ps.addLimit("other_config", limits.CheckMap("Open_vSwitch", "other_config", m))
	if len(g.DPDKExtra) > limits.MaxMapEntries {
		ps.add("dpdk_extra", "%d fragments, more than %d (limits.MaxMapEntries); contribute fewer", len(g.DPDKExtra), limits.MaxMapEntries)
		return
	}
	for i, frag := range g.DPDKExtra {
		ps.addLimit(fmt.Sprintf("dpdk_extra[%d]", i), limits.CheckValue("Open_vSwitch", "other_config", "dpdk-extra", frag))
	}
}

// limitChange checks one InterfaceChange of a Watcher: its keys and values as other_config
// entries of the interface, and the keys it removes.
func limitChange(ps *problems, f string, c InterfaceChange) {
	in := limits.Object(limits.Interface, c.Interface)
	set := c.Set
	if _, empty := set[""]; empty {
		set = make(map[string]string, len(c.Set))
		for k, v := range c.Set {
			if k != "" {
				set[k] = v
			}
		}
	}
	ps.addLimit(f+".set", limits.CheckMap(in, "other_config", set))
	if len(c.Remove) > limits.MaxMapEntries {
		ps.add(f+".remove", "%d keys, more than %d (limits.MaxMapEntries)", len(c.Remove), limits.MaxMapEntries)
		return
	}
	for _, k := range c.Remove {
		if k != "" {
			ps.addLimit(f+".remove", limits.CheckKey(in, "other_config", k))
		}
	}
	if c.Status != nil {
		limitStatus(ps, f+".status", in, *c.Status)
	}
}

// Bounds of an InterfaceStatus.
const (
	// MaxStatusSummaryBytes bounds InterfaceStatus.Summary.
	MaxStatusSummaryBytes = 512
	// MaxStatusDetails bounds the entries of InterfaceStatus.Details.
	MaxStatusDetails = 16
	// MaxStatusKeyBytes bounds a key of InterfaceStatus.Details.
	MaxStatusKeyBytes = 64
	// MaxStatusValueBytes bounds a value of InterfaceStatus.Details.
	MaxStatusValueBytes = 256
)

// limitStatus checks an InterfaceStatus against the bounds above: sizes, and text a terminal
// shows as sent (UTF-8, no control or invisible characters).
func limitStatus(ps *problems, f, object string, s InterfaceStatus) {
	if len(s.Summary) > MaxStatusSummaryBytes {
		ps.add(f+".summary", "%d bytes, more than %d (MaxStatusSummaryBytes)", len(s.Summary), MaxStatusSummaryBytes)
	} else {
		ps.addLimit(f+".summary", limits.CheckValue(object, "status", "summary", s.Summary))
	}
	if len(s.Details) > MaxStatusDetails {
		ps.add(f+".details", "%d entries, more than %d (MaxStatusDetails)", len(s.Details), MaxStatusDetails)
		return
	}
	for k, v := range s.Details {
		switch {
		case len(k) > MaxStatusKeyBytes:
			ps.add(f+".details", "key of %d bytes, more than %d (MaxStatusKeyBytes)", len(k), MaxStatusKeyBytes)
		case len(v) > MaxStatusValueBytes:
			ps.add(f+".details."+k, "%d bytes, more than %d (MaxStatusValueBytes)", len(v), MaxStatusValueBytes)
		default:
			ps.addLimit(f+".details", limits.CheckKey(object, "status details", k))
			ps.addLimit(f+".details."+k, limits.CheckValue(object, "status details", k, v))
		}
	}
}

// checkBridges checks Attachment.Bridges: each named once (limits.CheckName), a datapath type
// of the running OVS when facts list them, map columns within limits, no reserved key. How
// many bridges an object may have is the daemon's rule (docs/plugins.md).
func checkBridges(ps *problems, facts HostFacts, bs []OVSBridge) {
	if len(bs) > limits.MaxObjectsPerBatch {
		ps.add("bridges", "%d bridges, more than %d (limits.MaxObjectsPerBatch)", len(bs), limits.MaxObjectsPerBatch)
		return
	}
	seen := map[string]bool{}
	for i, b := range bs {
		f := fmt.Sprintf("bridges[%d]", i)
		br := limits.Object(limits.Bridge, b.Name)
		switch {
		case b.Name == "":
			ps.add(f+".name", "is empty")
		case seen[b.Name]:
			ps.add(f+".name", "%q is listed twice", b.Name)
		default:
			ps.addLimit(f+".name", limits.CheckName(limits.Bridge, b.Name))
		}
		seen[b.Name] = true
		if b.DatapathType != "" && len(facts.DatapathTypes) > 0 && !facts.HasDatapathType(b.DatapathType) {
			ps.add(f+".datapath_type", "%q is not a datapath type of the running Open vSwitch (%s)", b.DatapathType, strings.Join(facts.DatapathTypes, ", "))
		}
		ps.addLimit(f+".datapath_type", limits.CheckText(br, "datapath_type", b.DatapathType))
		if len(b.Protocols) > 8 {
			ps.add(f+".protocols", "%d protocols, more than 8", len(b.Protocols))
		}
		for j, pr := range b.Protocols {
			ps.addLimit(fmt.Sprintf("%s.protocols[%d]", f, j), limits.CheckText(br, "protocols", pr))
		}
		ps.addLimit(f+".other_config", limits.CheckMap(br, "other_config", b.OtherConfig))
		ps.addLimit(f+".external_ids", limits.CheckMap(br, "external_ids", b.ExternalIDs))
		checkReserved(ps, f+".external_ids", b.ExternalIDs)
	}
}

// checkJobs checks Attachment.Jobs: at most limits.MaxJobsPerPort, each valid
// (limits.CheckJob: name, type, a JSON object config within its size), names unique.
func checkJobs(ps *problems, js []Job) {
	if len(js) > limits.MaxJobsPerPort {
		ps.add("jobs", "%d jobs, more than %d (limits.MaxJobsPerPort)", len(js), limits.MaxJobsPerPort)
		return
	}
	seen := map[string]bool{}
	for i, j := range js {
		f := fmt.Sprintf("jobs[%d]", i)
		ps.addLimit(f, limits.CheckJob(j.Name, j.Type, j.Config))
		if seen[j.Name] {
			ps.add(f+".name", "%q is listed twice", j.Name)
		}
		seen[j.Name] = true
	}
}
