package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The checks the host makes on a plugin's answers before it writes anything, shared with the
// SDK's test kit so a plugin author meets them in unit tests first. Each returns nil or an
// *Error with code Internal (a malformed answer is a plugin bug) listing every problem.

// ReservedKeyPrefix starts the external_ids keys the host writes itself (ownership and state
// tags); a plugin may not set such keys.
const ReservedKeyPrefix = "ovsplane-"

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// ovsGroupTypes are the OpenFlow group types a Group may have.
var ovsGroupTypes = map[string]bool{"all": true, "select": true, "indirect": true, "fast_failover": true}

type problems []Problem

func (ps *problems) add(field, format string, args ...any) {
	*ps = append(*ps, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (ps problems) err(what string) error {
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.String()
	}
	return &Error{Code: Internal, Message: what + ": " + strings.Join(msgs, "; "), Problems: ps}
}

// ValidateInfo checks a plugin's Info: a valid unique-able name, a version, types with unique
// names, a kind matching a served capability, and schemas that are JSON.
func ValidateInfo(info Info) error {
	var ps problems
	if !namePattern.MatchString(info.Name) {
		ps.add("name", "%q must match %s", info.Name, namePattern)
	}
	if info.Version == "" {
		ps.add("version", "is empty")
	}
	has := map[Capability]bool{}
	for _, c := range info.Capabilities {
		has[c] = true
	}
	seen := map[string]bool{}
	for i, t := range info.Types {
		f := fmt.Sprintf("types[%d]", i)
		switch {
		case !namePattern.MatchString(t.Name):
			ps.add(f+".name", "%q must match %s", t.Name, namePattern)
		case seen[t.Name]:
			ps.add(f+".name", "%q is listed twice", t.Name)
		}
		seen[t.Name] = true
		switch {
		case t.Kind == ObjectKindPort && !has[CapabilityPortProvider]:
			ps.add(f+".kind", "port type %q without the port_provider capability", t.Name)
		case t.Kind == ObjectKindJob && !has[CapabilityDataPath]:
			ps.add(f+".kind", "job type %q without the datapath capability", t.Name)
		case t.Kind != ObjectKindPort && t.Kind != ObjectKindJob:
			ps.add(f+".kind", "unknown kind %d", t.Kind)
		}
		if t.OptionsSchema != "" && !json.Valid([]byte(t.OptionsSchema)) {
			ps.add(f+".options_schema", "is not JSON")
		}
	}
	return ps.err("plugin info")
}

// ValidateAttachment checks the answer of Attach to req: at least one port; port and interface
// names present and unique; interface types the running OVS supports (when facts lists them);
// tag, ofport_request and mtu_request in range; no reserved external_ids keys; state within
// MaxStateSize; names, text and sizes within package limits (see limits.go).
func ValidateAttachment(facts HostFacts, req PortRequest, a Attachment) error {
	var ps problems
	limitAttachment(&ps, a)
	if len(a.Ports) == 0 {
		ps.add("ports", "no port to write")
	}
	if len(a.State) > MaxStateSize {
		ps.add("state", "%d bytes, more than %d", len(a.State), MaxStateSize)
	}
	ports, ifaces := map[string]bool{}, map[string]bool{}
	for i, p := range a.Ports {
		f := fmt.Sprintf("ports[%d]", i)
		switch {
		case p.Name == "":
			ps.add(f+".name", "is empty")
		case ports[p.Name]:
			ps.add(f+".name", "%q is listed twice", p.Name)
		}
		ports[p.Name] = true
		if p.Tag != nil && (*p.Tag < 0 || *p.Tag > 4095) {
			ps.add(f+".tag", "%d out of range 0-4095", *p.Tag)
		}
		checkReserved(&ps, f+".external_ids", p.ExternalIDs)
		if len(p.Interfaces) == 0 {
			ps.add(f+".interfaces", "no interface")
		}
		for j, ifc := range p.Interfaces {
			checkInterface(&ps, fmt.Sprintf("%s.interfaces[%d]", f, j), facts, ifc, ifaces)
		}
	}
	checkBridges(&ps, facts, a.Bridges)
	checkJobs(&ps, a.Jobs)
	return ps.err(fmt.Sprintf("attachment of port %s/%s", req.Bridge, req.Name))
}

func checkInterface(ps *problems, f string, facts HostFacts, ifc OVSInterface, seen map[string]bool) {
	switch {
	case ifc.Name == "":
		ps.add(f+".name", "is empty")
	case seen[ifc.Name]:
		ps.add(f+".name", "%q is listed twice", ifc.Name)
	}
	seen[ifc.Name] = true
	if ifc.Type != "" && ifc.Type != "system" && len(facts.IfaceTypes) > 0 && !facts.HasIfaceType(ifc.Type) {
		ps.add(f+".type", "%q is not an interface type of this Open vSwitch (%s)", ifc.Type, strings.Join(facts.IfaceTypes, ", "))
	}
	if ifc.OfportRequest != nil && (*ifc.OfportRequest < 1 || *ifc.OfportRequest > 65279) {
		ps.add(f+".ofport_request", "%d out of range 1-65279", *ifc.OfportRequest)
	}
	if ifc.MTURequest != nil && (*ifc.MTURequest < 68 || *ifc.MTURequest > 65535) {
		ps.add(f+".mtu_request", "%d out of range 68-65535", *ifc.MTURequest)
	}
	checkReserved(ps, f+".external_ids", ifc.ExternalIDs)
}

func checkReserved(ps *problems, f string, m map[string]string) {
	for k := range m {
		if strings.HasPrefix(k, ReservedKeyPrefix) {
			ps.add(f, "key %q is reserved for the host", k)
		}
	}
}

// ValidateFlowSet checks the answer of Flows before anything reaches a bridge: at most
// limits.MaxFlowsPerPlugin flows and limits.MaxGroupsPerPlugin groups; cookies in the
// plugin's range; tables 0-254; every Match, Actions and bucket's Actions one line of
// ovs-ofctl syntax (ParseOFMatch, ParseOFActions, ParseOFBucketActions: no control byte,
// newline, space, quote, '#', backslash or ';', at most limits.MaxFlowBytes, no flow attribute in a
// match, no learn()); no two flows with the same table, priority and match; group ids in the
// plugin's range and unique, known group types and selection methods, at most
// limits.MaxBucketsPerGroup buckets. Every problem names its field (flows[3].actions) and
// the fix.
func ValidateFlowSet(cookies CookieRange, groups GroupRange, fs FlowSet) error {
	return checkFlowSet(cookies, groups, fs)
}

// ValidateChanges checks a Watcher's answer to batch: every change names an interface of the
// batch that is not removed, and no key is empty.
func ValidateChanges(batch PortEventBatch, changes []InterfaceChange) error {
	live := map[string]bool{}
	for _, e := range batch.Events {
		live[e.Interface] = e.Kind != EventRemoved
	}
	var ps problems
	for i, c := range changes {
		f := fmt.Sprintf("changes[%d]", i)
		limitChange(&ps, f, c)
		if !live[c.Interface] {
			ps.add(f+".interface", "%q is not a live interface of the batch", c.Interface)
		}
		for k := range c.Set {
			if k == "" {
				ps.add(f+".set", "empty key")
			}
		}
		for _, k := range c.Remove {
			if k == "" {
				ps.add(f+".remove", "empty key")
			}
		}
		if c.Status != nil && !c.Status.IsZero() {
			switch c.Status.Level {
			case StatusInfo, StatusWarning, StatusError:
			default:
				ps.add(f+".status.level", "%q is not a level (info, warning, error)", c.Status.Level)
			}
			if c.Status.Summary == "" {
				ps.add(f+".status.summary", "empty: say in one line what the plugin sees")
			}
		}
	}
	return ps.err("interface changes")
}

// ValidateGlobalConfig checks a contribution: no empty key, dpdk-extra only as fragments (the
// host assembles the key), no empty fragment; keys, values and fragments within package
// limits (see limits.go).
func ValidateGlobalConfig(g GlobalConfig) error {
	var ps problems
	limitGlobalConfig(&ps, g)
	for k := range g.OtherConfig {
		switch k {
		case "":
			ps.add("other_config", "empty key")
		case "dpdk-extra":
			ps.add("other_config.dpdk-extra", "contribute dpdk-extra as fragments (DPDKExtra)")
		}
	}
	for i, frag := range g.DPDKExtra {
		if strings.TrimSpace(frag) == "" {
			ps.add(fmt.Sprintf("dpdk_extra[%d]", i), "is empty")
		}
	}
	return ps.err("global config")
}
