package config

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/model/limits"
)

// IFNAMSIZ-1: the longest name a Linux network device may have.
const maxKernelName = 15

var (
	datapathTypes = []string{"", "system", "netdev"}
	failModes     = []string{"", "standalone", "secure"}
	protocols     = []string{"OpenFlow10", "OpenFlow11", "OpenFlow12", "OpenFlow13", "OpenFlow14", "OpenFlow15"}
	bondModes     = []string{"active-backup", "balance-slb", "balance-tcp"}
	logLevels     = []string{"debug", "info", "warn", "error"}
	logFormats    = []string{"text", "json"}
	controllerPfx = []string{"tcp:", "ssl:", "unix:", "ptcp:", "pssl:", "punix:"}
	hexMask       = regexp.MustCompile(`^(0[xX])?[0-9a-fA-F]+$`)
	octalMode     = regexp.MustCompile(`^0?[0-7]{3}$`)
)

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

// Validate checks the whole configuration and returns every problem at once (errors.Join), each
// message starting with the key path and saying what is accepted, for example
//
//	bridges[1].name: duplicate bridge name "br0" (also bridges[0])
//
// It does not touch the host: files, groups and devices are checked by the daemon when used.
func (c *Config) Validate() error {
	v := &validator{}
	if len(c.Plugins) > 0 {
		// Types the plugins provide are known once they run: the daemon checks them then.
		v.pluginType = func(string) bool { return true }
	}
	c.validateSettings(v)
	if !c.tooManyObjects(v) {
		c.validateDesired(v)
	}
	c.validatePlugins(v)
	return errors.Join(v.errs...)
}

type validator struct {
	errs []error
	// pluginType, if set, accepts interface types served by plugins.
	pluginType func(string) bool
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

func oneOf(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "one of: " + strings.Join(q, ", ")
}

func (c *Config) validateSettings(v *validator) {
	ssl := false
	for i, ep := range c.OVSDB.Endpoints {
		path := fmt.Sprintf("ovsdb.endpoints[%d]", i)
		kind, rest, _ := strings.Cut(ep, ":")
		switch kind {
		case "unix":
			if rest == "" {
				v.add(path, "%q has no socket path (write unix:/var/run/openvswitch/db.sock)", ep)
			}
		case "tcp", "ssl":
			ssl = ssl || kind == "ssl"
			if _, port, err := net.SplitHostPort(rest); err != nil || port == "" {
				v.add(path, "%q is not %s:HOST:PORT (IPv6 hosts in brackets)", ep, kind)
			}
		default:
			v.add(path, "%q must start with unix:, tcp: or ssl:", ep)
		}
	}
	if ssl {
		checkTLS(v, "ovsdb.tls", c.OVSDB.TLS, true, "an ssl: endpoint")
	}
	if w := c.OVSDB.ReconnectWait; w != 0 { // 0: unset, the daemon's default
		if p := reconnectWaitProblem(w); p != "" {
			v.add("ovsdb.reconnect_wait", "%s", p)
		}
	}
	if !filepath.IsAbs(c.DataDir) {
		v.add("data_dir", "%q must be an absolute path", c.DataDir)
	}
	if c.PluginDir != "" && !filepath.IsAbs(c.PluginDir) {
		v.add("plugin_dir", "%q must be an absolute path", c.PluginDir)
	}
	tcp := false
	for i, addr := range c.API.Listen {
		path := fmt.Sprintf("api.listen[%d]", i)
		kind, rest, _ := strings.Cut(addr, ":")
		switch kind {
		case "unix":
			if !filepath.IsAbs(rest) {
				v.add(path, "%q needs an absolute socket path (unix:/run/ovsplane/ovsplaned.sock)", addr)
			}
		case "tcp":
			tcp = true
			if _, port, err := net.SplitHostPort(rest); err != nil || port == "" {
				v.add(path, "%q is not tcp:HOST:PORT", addr)
			}
		default:
			v.add(path, "%q must start with unix: or tcp:", addr)
		}
	}
	if tcp {
		checkTLS(v, "api.tls", c.API.TLS, true, "a tcp: listener")
	}
	if !octalMode.MatchString(c.API.SocketMode) {
		v.add("api.socket_mode", "%q is not an octal file mode (write it quoted, like \"0660\")", c.API.SocketMode)
	}
	c.validateAuth(v)
	c.validatePprof(v)
	if !slices.Contains(logLevels, c.Log.Level) {
		v.add("log.level", "unknown level %q (%s)", c.Log.Level, oneOf(logLevels))
	}
	if !slices.Contains(logFormats, c.Log.Format) {
		v.add("log.format", "unknown format %q (%s)", c.Log.Format, oneOf(logFormats))
	}
	if a := c.Metrics.Address; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			v.add("metrics.address", "%q is not HOST:PORT (like 127.0.0.1:9476 or :9476)", a)
		}
	}
}

func checkTLS(v *validator, path string, t TLS, needCA bool, why string) {
	if t.PrivateKey == "" {
		v.add(path+".private_key", "required by %s", why)
	}
	if t.Certificate == "" {
		v.add(path+".certificate", "required by %s", why)
	}
	if needCA && t.CACert == "" {
		v.add(path+".ca_cert", "required by %s", why)
	}
}

func (c *Config) validateDesired(v *validator) {
	checkMap(v, "other_config", c.OtherConfig)
	limitMap(v, "other_config", "Open_vSwitch", "other_config", c.OtherConfig)
	if val, ok := c.OtherConfig["dpdk-init"]; ok && !slices.Contains([]string{"true", "false", "try"}, val) {
		v.add("other_config.dpdk-init", "%q is not one of: \"true\", \"false\", \"try\"", val)
	}
	for _, k := range []string{"pmd-cpu-mask", "dpdk-lcore-mask"} {
		if val, ok := c.OtherConfig[k]; ok && !hexMask.MatchString(val) {
			v.add("other_config."+k, "%q is not a hexadecimal CPU mask (like \"0x6\")", val)
		}
	}

	bridges := map[string]string{} // name → path
	ports := map[string]string{}
	ifaces := map[string]string{}
	for bi, b := range c.Bridges {
		bp := fmt.Sprintf("bridges[%d]", bi)
		switch {
		case b.Name == "":
			v.add(bp+".name", "required")
		case len(b.Name) > maxKernelName:
			v.add(bp+".name", "%q is longer than %d characters (its local port is a kernel device)", b.Name, maxKernelName)
		case strings.ContainsAny(b.Name, "/ \t\n"):
			v.add(bp+".name", "%q must not contain '/' or white space", b.Name)
		default:
			v.addErr(bp+".name", limits.CheckName(limits.Bridge, b.Name))
		}
		if b.Name != "" {
			if prev, dup := bridges[b.Name]; dup {
				v.add(bp+".name", "duplicate bridge name %q (also %s)", b.Name, prev)
			} else {
				bridges[b.Name] = bp
			}
		}
		if !slices.Contains(datapathTypes, b.DatapathType) {
			v.add(bp+".datapath_type", "unknown datapath type %q (%s)", b.DatapathType, oneOf(datapathTypes))
		}
		if !slices.Contains(failModes, b.FailMode) {
			v.add(bp+".fail_mode", "unknown fail mode %q (%s)", b.FailMode, oneOf(failModes))
		}
		for i, p := range b.Protocols {
			if !slices.Contains(protocols, p) {
				v.add(fmt.Sprintf("%s.protocols[%d]", bp, i), "unknown protocol %q (%s)", p, oneOf(protocols))
			}
		}
		for i, ctl := range b.Controllers {
			if !slices.ContainsFunc(controllerPfx, func(p string) bool { return strings.HasPrefix(ctl, p) && len(ctl) > len(p) }) {
				v.add(fmt.Sprintf("%s.controller[%d]", bp, i), "%q is not a controller target (tcp:, ssl:, unix:, ptcp:, pssl: or punix: followed by an address)", ctl)
			} else if err := checkController(b.Controllers, i); err != nil {
				v.add(fmt.Sprintf("%s.controller[%d]", bp, i), "%v", err)
			}
		}
		checkMap(v, bp+".other_config", b.OtherConfig)
		checkMap(v, bp+".external_ids", b.ExternalIDs)
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
			v.add(pp+".name", "port name %q is the name of bridge %s (its local port)", name, bp)
		}
	}
	for _, name := range sortedKeys(ifaces) {
		ip := ifaces[name]
		if bp, clash := bridges[name]; clash {
			if _, isPort := ports[name]; !isPort {
				v.add(ip+".name", "interface name %q is the name of bridge %s (its local interface)", name, bp)
			}
		}
	}
}

func validatePort(v *validator, pp string, p Port, ports, ifaces map[string]string) {
	switch {
	case p.Name == "":
		v.add(pp+".name", "required")
	default:
		v.addErr(pp+".name", limits.CheckName(limits.Port, p.Name))
		if prev, dup := ports[p.Name]; dup {
			v.add(pp+".name", "duplicate port name %q (also %s)", p.Name, prev)
		} else {
			ports[p.Name] = pp
		}
	}
	if p.Tag != nil && (*p.Tag < 0 || *p.Tag > 4095) {
		v.add(pp+".tag", "VLAN %d out of range (0..4095)", *p.Tag)
	}
	for i, t := range p.Trunks {
		if t < 0 || t > 4095 {
			v.add(fmt.Sprintf("%s.trunks[%d]", pp, i), "VLAN %d out of range (0..4095)", t)
		}
	}
	switch {
	case len(p.Interfaces) == 0:
		v.add(pp+".interfaces", "at least one interface required (for a plain port, one with the port's name)")
	case len(p.Interfaces) == 1 && p.BondMode != "":
		v.add(pp+".bond_mode", "set on a port with one interface (a bond needs two or more)")
	}
	if p.BondMode != "" && !slices.Contains(bondModes, p.BondMode) {
		v.add(pp+".bond_mode", "unknown bond mode %q (%s)", p.BondMode, oneOf(bondModes))
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

func validateInterface(v *validator, ip string, in Interface, ifaces map[string]string) {
	switch {
	case in.Name == "":
		v.add(ip+".name", "required")
	case strings.ContainsAny(in.Name, "/ \t\n"):
		v.add(ip+".name", "%q must not contain '/' or white space", in.Name)
	case len(in.Name) > maxKernelName && slices.Contains(kernelNamed, in.Type):
		v.add(ip+".name", "%q is longer than %d characters, the limit for a kernel device of type %q", in.Name, maxKernelName, in.Type)
	default:
		v.addErr(ip+".name", limits.CheckInterfaceName(in.Name, in.Type))
	}
	if in.Name != "" {
		if prev, dup := ifaces[in.Name]; dup {
			v.add(ip+".name", "duplicate interface name %q (also %s)", in.Name, prev)
		} else {
			ifaces[in.Name] = ip
		}
	}
	if v.pluginType != nil && v.pluginType(in.Type) {
		// a plugin's type: the plugin validates the options
	} else if !slices.Contains(InterfaceTypes, in.Type) {
		also := ""
		if v.pluginType != nil {
			also = ", or a type of a configured plugin"
		}
		v.add(ip+".type", "unknown interface type %q (%s%s)", in.Type, oneOf(InterfaceTypes), also)
	} else if opt, need := requiredOptions[in.Type]; need && in.Options[opt] == "" {
		v.add(ip+".options."+opt, "required for type %q", in.Type)
	}
	if in.MTURequest != nil && (*in.MTURequest < 68 || *in.MTURequest > 65535) {
		v.add(ip+".mtu_request", "%d out of range (68..65535)", *in.MTURequest)
	}
	if in.OFPortRequest != nil && (*in.OFPortRequest < 1 || *in.OFPortRequest > 65279) {
		v.add(ip+".ofport_request", "%d out of range (1..65279)", *in.OFPortRequest)
	}
	checkMap(v, ip+".options", in.Options)
	checkMap(v, ip+".other_config", in.OtherConfig)
	checkMap(v, ip+".external_ids", in.ExternalIDs)
	owner := limits.Object(limits.Interface, in.Name)
	limitMap(v, ip+".options", owner, "options", in.Options)
	limitMap(v, ip+".other_config", owner, "other_config", in.OtherConfig)
	limitMap(v, ip+".external_ids", owner, "external_ids", in.ExternalIDs)
}

func checkMap(v *validator, path string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		switch {
		case k == "":
			v.add(path, "empty key")
		case strings.HasSuffix(path, "external_ids") && strings.HasPrefix(k, reservedPrefix):
			v.add(path+"."+k, "keys starting with %q are reserved for ovsplane's ownership tags; rename it", reservedPrefix)
		}
	}
}

// reservedPrefix starts the external_ids keys ovsplane writes itself (ovsdb.TagPrefix).
const reservedPrefix = "ovsplane-"

// ValidateBridge checks one bridge given on its own (through the API): the same rules and
// messages as Validate, with paths starting at "bridge". Ports must be empty: they are objects
// of their own there.
func ValidateBridge(b Bridge) error {
	if len(b.Ports) > 0 {
		return fmt.Errorf("bridge.ports: ports are applied one by one (ApplyPort), not with their bridge")
	}
	return validateAlone(&Config{Bridges: []Bridge{b}}, "bridges[0]", "bridge", b.Name)
}

// ValidatePort checks one port given on its own (through the API) for the named bridge: the
// same rules and messages as Validate, with paths starting at "port".
func ValidatePort(bridge string, p Port) error { return ValidatePortWith(bridge, p, nil) }

// ValidatePortWith is ValidatePort that also accepts the interface types for which
// pluginType returns true (types served by plugins, whose options the plugin validates).
func ValidatePortWith(bridge string, p Port, pluginType func(string) bool) error {
	if bridge == "" {
		return fmt.Errorf("bridge: required (the bridge the port belongs to)")
	}
	return validateAloneWith(&Config{Bridges: []Bridge{{Name: bridge, Ports: []Port{p}}}}, "bridges[0].ports[0]", "port", bridge, pluginType)
}

// validateAlone validates c's desired state and renames the paths under from to to.
func validateAlone(c *Config, from, to, bridge string) error {
	return validateAloneWith(c, from, to, bridge, nil)
}

func validateAloneWith(c *Config, from, to, bridge string, pluginType func(string) bool) error {
	v := &validator{pluginType: pluginType}
	c.validateDesired(v)
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
