package desired

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/internal/oftarget"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
)

var (
	datapathTypes = []string{"", "system", "netdev"}
	failModes     = []string{"", "standalone", "secure"}
	protocols     = []string{"OpenFlow10", "OpenFlow11", "OpenFlow12", "OpenFlow13", "OpenFlow14", "OpenFlow15"}
	bondModes     = []string{"active-backup", "balance-slb", "balance-tcp"}
	controllerPfx = []string{"tcp:", "ssl:", "unix:", "ptcp:", "pssl:", "punix:"}
	hexMask       = regexp.MustCompile(`^(0[xX])?[0-9a-fA-F]+$`)
)

// IFNAMSIZ-1: the longest name a Linux network device may have.
const maxKernelName = 15

// requiredOptions lists, per interface type, the option that type cannot work without.
var requiredOptions = map[string]string{
	"dpdk":                "dpdk-devargs",
	"dpdkvhostuserclient": "vhost-server-path",
	"patch":               "peer",
	"vxlan":               "remote_ip",
	"geneve":              "remote_ip",
	"gre":                 "remote_ip",
}

// kernelNamed are the interface types backed by a Linux network device of the same name.
var kernelNamed = []string{"", "system", "internal", "tap"}

// Validator collects the problems of a configuration, each an error whose message starts
// with the key path ("bridges[1].name: …"). Config.Validate (vswitchd/config) uses one for
// the daemon settings too, so every message has the same form. The zero value is ready.
type Validator struct {
	errs []error
	// PluginType, if set, accepts the interface types for which it returns true: types served
	// by plugins, whose options the plugin validates.
	PluginType func(string) bool
}

// Err returns every problem recorded, joined (errors.Join), or nil when there is none.
func (v *Validator) Err() error { return errors.Join(v.errs...) }

// Add records the problem format, args at path.
func (v *Validator) Add(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

// OneOf renders the accepted values of a key for a message: one of: "a", "b".
func OneOf(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "one of: " + strings.Join(q, ", ")
}

// Desired checks a desired state, the global other_config keys and the bridges with their
// ports and interfaces, with the paths of the configuration file ("other_config.KEY",
// "bridges[i].ports[j]…"). Call TooManyObjects first: Desired does not check the total count.
func (v *Validator) Desired(otherConfig map[string]string, bs []model.Bridge) {
	checkMap(v, "other_config", otherConfig)
	limitMap(v, "other_config", "Open_vSwitch", "other_config", otherConfig)
	if val, ok := otherConfig["dpdk-init"]; ok && !slices.Contains([]string{"true", "false", "try"}, val) {
		v.Add("other_config.dpdk-init", "%q is not one of: \"true\", \"false\", \"try\"", val)
	}
	for _, k := range []string{"pmd-cpu-mask", "dpdk-lcore-mask"} {
		if val, ok := otherConfig[k]; ok && !hexMask.MatchString(val) {
			v.Add("other_config."+k, "%q is not a hexadecimal CPU mask (like \"0x6\")", val)
		}
	}

	bridges := map[string]string{} // name → path
	ports := map[string]string{}
	ifaces := map[string]string{}
	for bi, b := range bs {
		bp := fmt.Sprintf("bridges[%d]", bi)
		switch {
		case b.Name == "":
			v.Add(bp+".name", "required")
		case len(b.Name) > maxKernelName:
			v.Add(bp+".name", "%q is longer than %d characters (its local port is a kernel device)", b.Name, maxKernelName)
		case strings.ContainsAny(b.Name, "/ \t\n"):
			v.Add(bp+".name", "%q must not contain '/' or white space", b.Name)
		default:
			v.AddErr(bp+".name", limits.CheckName(limits.Bridge, b.Name))
		}
		if b.Name != "" {
			if prev, dup := bridges[b.Name]; dup {
				v.Add(bp+".name", "duplicate bridge name %q (also %s)", b.Name, prev)
			} else {
				bridges[b.Name] = bp
			}
		}
		if !slices.Contains(datapathTypes, b.DatapathType) {
			v.Add(bp+".datapath_type", "unknown datapath type %q (%s)", b.DatapathType, OneOf(datapathTypes))
		}
		if !slices.Contains(failModes, b.FailMode) {
			v.Add(bp+".fail_mode", "unknown fail mode %q (%s)", b.FailMode, OneOf(failModes))
		}
		for i, p := range b.Protocols {
			if !slices.Contains(protocols, p) {
				v.Add(fmt.Sprintf("%s.protocols[%d]", bp, i), "unknown protocol %q (%s)", p, OneOf(protocols))
			}
		}
		for i, ctl := range b.Controllers {
			if !slices.ContainsFunc(controllerPfx, func(p string) bool { return strings.HasPrefix(ctl, p) && len(ctl) > len(p) }) {
				v.Add(fmt.Sprintf("%s.controller[%d]", bp, i), "%q is not a controller target (tcp:, ssl:, unix:, ptcp:, pssl: or punix: followed by an address)", ctl)
			} else if err := checkController(b.Controllers, i); err != nil {
				v.Add(fmt.Sprintf("%s.controller[%d]", bp, i), "%v", err)
			}
		}
		checkMap(v, bp+".other_config", b.OtherConfig)
		checkMap(v, bp+".external_ids", b.ExternalIDs)
		checkExport(v, bp, b)
		checkMirrors(v, bp, b)
		limitMap(v, bp+".other_config", limits.Object(limits.Bridge, b.Name), "other_config", b.OtherConfig)
		limitMap(v, bp+".external_ids", limits.Object(limits.Bridge, b.Name), "external_ids", b.ExternalIDs)
		for pi, p := range b.Ports {
			validatePort(v, fmt.Sprintf("%s.ports[%d]", bp, pi), p, ports, ifaces)
		}
	}
	// A bridge's local port and interface carry its name.
	for _, name := range sortedKeys(ports) {
		pp := ports[name]
		if bp, clash := bridges[name]; clash {
			v.Add(pp+".name", "port name %q is the name of bridge %s (its local port)", name, bp)
		}
	}
	for _, name := range sortedKeys(ifaces) {
		ip := ifaces[name]
		if bp, clash := bridges[name]; clash {
			if _, isPort := ports[name]; !isPort {
				v.Add(ip+".name", "interface name %q is the name of bridge %s (its local interface)", name, bp)
			}
		}
	}
}

func validatePort(v *Validator, pp string, p model.Port, ports, ifaces map[string]string) {
	switch {
	case p.Name == "":
		v.Add(pp+".name", "required")
	default:
		v.AddErr(pp+".name", limits.CheckName(limits.Port, p.Name))
		if prev, dup := ports[p.Name]; dup {
			v.Add(pp+".name", "duplicate port name %q (also %s)", p.Name, prev)
		} else {
			ports[p.Name] = pp
		}
	}
	if p.Tag != nil && (*p.Tag < 0 || *p.Tag > 4095) {
		v.Add(pp+".tag", "VLAN %d out of range (0..4095)", *p.Tag)
	}
	for i, t := range p.Trunks {
		if t < 0 || t > 4095 {
			v.Add(fmt.Sprintf("%s.trunks[%d]", pp, i), "VLAN %d out of range (0..4095)", t)
		}
	}
	switch {
	case len(p.Interfaces) == 0:
		v.Add(pp+".interfaces", "at least one interface required (for a plain port, one with the port's name)")
	case len(p.Interfaces) == 1 && p.BondMode != "":
		v.Add(pp+".bond_mode", "set on a port with one interface (a bond needs two or more)")
	}
	if p.BondMode != "" && !slices.Contains(bondModes, p.BondMode) {
		v.Add(pp+".bond_mode", "unknown bond mode %q (%s)", p.BondMode, OneOf(bondModes))
	}
	validateVLANMode(v, pp, p)
	checkQoS(v, pp, p)
	checkBond(v, pp, p)
	if !slices.Contains(model.LACPModes, p.LACP) {
		v.Add(pp+".lacp", "unknown LACP mode %q (%s)", p.LACP, OneOf(model.LACPModes))
	}
	checkMap(v, pp+".other_config", p.OtherConfig)
	checkMap(v, pp+".external_ids", p.ExternalIDs)
	limitMap(v, pp+".other_config", limits.Object(limits.Port, p.Name), "other_config", p.OtherConfig)
	limitMap(v, pp+".external_ids", limits.Object(limits.Port, p.Name), "external_ids", p.ExternalIDs)
	if tooManyInterfaces(v, pp, p) {
		return
	}
	for ii, in := range p.Interfaces {
		validateInterface(v, fmt.Sprintf("%s.interfaces[%d]", pp, ii), in, ifaces)
	}
}

// validateVLANMode checks vlan_mode, and the tag or trunks that OVS would silently ignore
// under it (ovs-vswitchd.conf.db(5), Port's VLAN configuration): a trunk port has no tag, an
// access port no trunks.
func validateVLANMode(v *Validator, pp string, p model.Port) {
	switch p.VLANMode {
	case "trunk":
		if p.Tag != nil {
			v.Add(pp+".tag", "set on a port with vlan_mode trunk, which has no tag (OVS would ignore it); remove tag, or use vlan_mode native-tagged or native-untagged to give the port a native VLAN")
		}
	case "access":
		if len(p.Trunks) > 0 {
			v.Add(pp+".trunks", "set on a port with vlan_mode access, which carries only its tag (OVS would ignore them); remove trunks, or use vlan_mode native-tagged or native-untagged")
		}
	default:
		if !slices.Contains(model.VLANModes, p.VLANMode) {
			v.Add(pp+".vlan_mode", "unknown VLAN mode %q (%s)", p.VLANMode, OneOf(model.VLANModes))
		}
	}
}

func validateInterface(v *Validator, ip string, in model.Interface, ifaces map[string]string) {
	switch {
	case in.Name == "":
		v.Add(ip+".name", "required")
	case strings.ContainsAny(in.Name, "/ \t\n"):
		v.Add(ip+".name", "%q must not contain '/' or white space", in.Name)
	case len(in.Name) > maxKernelName && slices.Contains(kernelNamed, in.Type):
		v.Add(ip+".name", "%q is longer than %d characters, the limit for a kernel device of type %q", in.Name, maxKernelName, in.Type)
	default:
		v.AddErr(ip+".name", limits.CheckInterfaceName(in.Name, in.Type))
	}
	if in.Name != "" {
		if prev, dup := ifaces[in.Name]; dup {
			v.Add(ip+".name", "duplicate interface name %q (also %s)", in.Name, prev)
		} else {
			ifaces[in.Name] = ip
		}
	}
	if v.PluginType != nil && v.PluginType(in.Type) {
		// a plugin's type: the plugin validates the options
	} else if !slices.Contains(model.InterfaceTypes, in.Type) {
		also := ""
		if v.PluginType != nil {
			also = ", or a type of a configured plugin"
		}
		v.Add(ip+".type", "unknown interface type %q (%s%s)", in.Type, OneOf(model.InterfaceTypes), also)
	} else if opt, need := requiredOptions[in.Type]; need && in.Options[opt] == "" {
		v.Add(ip+".options."+opt, "required for type %q", in.Type)
	}
	if in.MTURequest != nil && (*in.MTURequest < 68 || *in.MTURequest > 65535) {
		v.Add(ip+".mtu_request", "%d out of range (68..65535)", *in.MTURequest)
	}
	if in.OFPortRequest != nil && (*in.OFPortRequest < 1 || *in.OFPortRequest > 65279) {
		v.Add(ip+".ofport_request", "%d out of range (1..65279)", *in.OFPortRequest)
	}
	checkPolicing(v, ip, in)
	checkMap(v, ip+".options", in.Options)
	checkMap(v, ip+".other_config", in.OtherConfig)
	checkMap(v, ip+".external_ids", in.ExternalIDs)
	owner := limits.Object(limits.Interface, in.Name)
	limitMap(v, ip+".options", owner, "options", in.Options)
	limitMap(v, ip+".other_config", owner, "other_config", in.OtherConfig)
	limitMap(v, ip+".external_ids", owner, "external_ids", in.ExternalIDs)
}

func checkMap(v *Validator, path string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		switch {
		case k == "":
			v.Add(path, "empty key")
		case strings.HasSuffix(path, "external_ids") && strings.HasPrefix(k, reservedPrefix):
			v.Add(path+"."+k, "keys starting with %q are reserved for ovsplane's ownership tags; rename it", reservedPrefix)
		}
	}
}

// reservedPrefix starts the external_ids keys ovsplane writes itself (ovsdb.TagPrefix).
const reservedPrefix = "ovsplane-"

// ValidateBridge checks one bridge given on its own (through the API): the same rules and
// messages as Validate, with paths starting at "bridge". Ports must be empty: they are objects
// of their own there.
func ValidateBridge(b model.Bridge) error {
	if len(b.Ports) > 0 {
		return fmt.Errorf("bridge.ports: ports are applied one by one (ApplyPort), not with their bridge")
	}
	return validateAloneWith([]model.Bridge{b}, "bridges[0]", "bridge", b.Name, nil)
}

// ValidatePort checks one port given on its own (through the API) for the named bridge: the
// same rules and messages as Validate, with paths starting at "port".
func ValidatePort(bridge string, p model.Port) error { return ValidatePortWith(bridge, p, nil) }

// ValidatePortWith is ValidatePort that also accepts the interface types for which
// pluginType returns true (types served by plugins, whose options the plugin validates).
func ValidatePortWith(bridge string, p model.Port, pluginType func(string) bool) error {
	if bridge == "" {
		return fmt.Errorf("bridge: required (the bridge the port belongs to)")
	}
	return validateAloneWith([]model.Bridge{{Name: bridge, Ports: []model.Port{p}}}, "bridges[0].ports[0]", "port", bridge, pluginType)
}

// validateAloneWith validates bridges (a desired state without other_config) and renames the
// paths under from to to.
func validateAloneWith(bridges []model.Bridge, from, to, bridge string, pluginType func(string) bool) error {
	v := &Validator{PluginType: pluginType}
	v.Desired(nil, bridges)
	rename := func(msg string) string {
		switch {
		case strings.HasPrefix(msg, from):
			msg = to + strings.TrimPrefix(msg, from)
		case strings.HasPrefix(msg, "bridges[0]"):
			msg = "bridge" + strings.TrimPrefix(msg, "bridges[0]")
		}
		return strings.ReplaceAll(msg, "bridge bridges[0]", fmt.Sprintf("bridge %q", bridge))
	}
	var p limits.Problems
	for _, e := range v.errs {
		p.Add(checkedAlone(e, rename))
	}
	return p.Err()
}

// This file applies the bounds and text rules of package limits to the desired state: the
// configuration file, API requests (ValidateBridge, ValidatePort) and plugins' port shapes all
// pass here, so a request refused at one door is refused at every door, with the same message.

// pathError is a problem found at a key path. It keeps the problem (an *limits.Error for
// limits) for errors.Is and errors.As.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }

func (e *pathError) Unwrap() error { return e.err }

// AddErr records err (nil is ignored) at path; errors.Is and errors.As see err through it.
func (v *Validator) AddErr(path string, err error) {
	if err != nil {
		v.errs = append(v.errs, &pathError{path: path, err: err})
	}
}

// limitMap checks one map column of an object with limits.CheckMap. The empty key is left to
// checkMap, which has its own message for it.
func limitMap(v *Validator, path string, owner string, column string, m map[string]string) {
	if len(m) > limits.MaxMapEntries {
		v.AddErr(path, limits.CheckMap(owner, column, m))
		return
	}
	if _, hasEmpty := m[""]; hasEmpty {
		rest := make(map[string]string, len(m))
		for k, val := range m {
			if k != "" {
				rest[k] = val
			}
		}
		m = rest
	}
	var p limits.Problems
	limits.CheckMapInto(&p, owner, column, m)
	v.AddErr(path, p.Err())
}

// countObjects returns the number of bridges, ports and interfaces.
func countObjects(bridges []model.Bridge) int {
	n := len(bridges)
	for _, b := range bridges {
		n += len(b.Ports)
		for _, p := range b.Ports {
			n += len(p.Interfaces)
		}
	}
	return n
}

// checkedAlone renders a problem of ValidateBridge or ValidatePort: a limits problem names its
// object itself, so it is returned as it is (errors.As finds its *limits.Error); any other
// problem gets the path renamed by rename.
func checkedAlone(err error, rename func(string) string) error {
	var pe *pathError
	var le *limits.Error
	if errors.As(err, &pe) && errors.As(pe.err, &le) && le.Object != "" {
		return pe.err
	}
	msg := rename(err.Error())
	if msg == err.Error() {
		return err
	}
	return &renamed{msg: msg, err: err}
}

// renamed is an error whose message was rewritten; Unwrap keeps the original for errors.Is.
type renamed struct {
	msg string
	err error
}

func (e *renamed) Error() string { return e.msg }

func (e *renamed) Unwrap() error { return e.err }

// tooManyInterfaces reports a port over limits.MaxInterfacesPerPort. Its interfaces are then
// not checked one by one: a 100,000-interface port gets one line, at once.
func tooManyInterfaces(v *Validator, pp string, p model.Port) bool {
	err := limits.CheckInterfaces(limits.Object(limits.Port, p.Name), len(p.Interfaces))
	v.AddErr(pp+".interfaces", err)
	if err == nil {
		portTooBig(v, pp, p)
	}
	return err != nil
}

// portTooBig reports a port whose names, keys and values exceed limits.MaxPortBytes.
func portTooBig(v *Validator, pp string, p model.Port) {
	n := len(p.Name) + limits.MapBytes(p.OtherConfig) + limits.MapBytes(p.ExternalIDs)
	for _, in := range p.Interfaces {
		n += len(in.Name) + len(in.Type) + limits.MapBytes(in.Options) + limits.MapBytes(in.OtherConfig) + limits.MapBytes(in.ExternalIDs)
	}
	v.AddErr(pp, limits.CheckPortBytes(limits.Object(limits.Port, p.Name), n))
}

// TooManyObjects records a problem and returns true when bridges, with their ports and
// interfaces, hold more objects than limits.MaxObjectsPerRequest.
func (v *Validator) TooManyObjects(bridges []model.Bridge) bool {
	err := limits.CheckObjects("configuration", countObjects(bridges))
	v.AddErr("bridges", err)
	return err != nil
}

// checkController checks targets[i], a controller target whose connection method is known:
// its address (oftarget.Validate: bounded, no control characters, a valid host, port or path),
// and that no earlier entry lists it already.
func checkController(targets []string, i int) error {
	if err := oftarget.Validate(targets[i]); err != nil {
		return err
	}
	if j := slices.Index(targets[:i], targets[i]); j >= 0 {
		return fmt.Errorf("duplicate controller target %q (also controller[%d]); list each target once", targets[i], j)
	}
	return nil
}
