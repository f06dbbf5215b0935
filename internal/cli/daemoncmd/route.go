package daemoncmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/model"
)

// OVSInterfaceTypes are the interface types of Open vSwitch 3.1 (its netdev classes in
// lib/netdev-linux.c, netdev-vport.c, netdev-dpdk.c and netdev-dummy.c; "" is system). vsctl
// hands every command line that names only these types to OVSDB without asking anyone: a
// type not listed here is taken for a plugin's. The dummy types exist only in an
// ovs-vswitchd started with --enable-dummy (tests, sandboxes); srv6 arrived in 3.2 and is
// listed so that a newer ovs-vswitchd's tunnel is never mistaken for a plugin port.
var OVSInterfaceTypes = []string{"", "system", "internal", "tap",
	"geneve", "gre", "vxlan", "lisp", "stt", "erspan", "ip6erspan", "ip6gre", "gtpu", "bareudp", "srv6",
	"patch", "dpdk", "dpdkvhostuser", "dpdkvhostuserclient", "afxdp", "afxdp-nonpmd",
	"dummy", "dummy-internal", "dummy-pmd"}

// IsOVSInterfaceType reports whether t is one of OVSInterfaceTypes.
func IsOVSInterfaceType(t string) bool { return slices.Contains(OVSInterfaceTypes, t) }

// RouteKind is where an ovs-vsctl command line goes.
type RouteKind int

const (
	// RouteOVSDB: the line names no interface type outside OVSInterfaceTypes (or does not
	// parse): ovs-vsctl's implementation runs it, unchanged.
	RouteOVSDB RouteKind = iota
	// RouteDaemon: the line is exactly `[--may-exist] add-port BR P -- set Interface P type=T
	// [options:K=V]... [external_ids:K=V]...` with T outside OVSInterfaceTypes: the port
	// goes to ovsplaned's ApplyPort.
	RouteDaemon
	// RouteRefuse: T outside OVSInterfaceTypes appears in any other shape (with other
	// commands, other columns, create, set on its own...).
	RouteRefuse
)

// Route is the decision Classify makes for one command line.
type Route struct {
	Kind RouteKind
	// Type is the interface type outside OVSInterfaceTypes (the first one, for RouteRefuse).
	Type string
	// For RouteDaemon: the bridge, and the port with its one interface of type Type
	// carrying the options and external_ids given (nil when none).
	Bridge   string
	Port     model.Port
	MayExist bool
	// Why, for RouteRefuse, says what is wrong with the shape.
	Why string
	// foreign are all the interface types outside OVSInterfaceTypes the line sets, in order.
	foreign []string
	// timeout is the line's -t value in seconds (0: not given).
	timeout uint32
}

// Classify decides where an ovs-vsctl command line (without the program name) goes. It
// does no I/O: whether T is a plugin's type is decided by its absence from
// OVSInterfaceTypes (RoutePort then asks the running Open vSwitch about such a T). A line that does not parse, or asks for help or a version, is
// RouteOVSDB: ovs-vsctl's implementation reports it as ovs-vsctl would.
func Classify(args []string) Route {
	inv, err := cli.Parse(args)
	if err != nil || inv.Action != cli.ActionRun {
		return Route{Kind: RouteOVSDB}
	}
	var foreign []string
	for i := range inv.Commands {
		for _, t := range foreignTypes(&inv.Commands[i]) {
			if !slices.Contains(foreign, t) {
				foreign = append(foreign, t)
			}
		}
	}
	if len(foreign) == 0 { // "" is an OVS type (system)
		return Route{Kind: RouteOVSDB}
	}
	r, why := addPortShape(inv)
	switch {
	case why != "":
		r = Route{Kind: RouteRefuse, Type: foreign[0], Why: why}
	case inv.Options.DryRun:
		r = Route{Kind: RouteRefuse, Type: r.Type, Why: "--dry-run cannot be honoured for a port ovsplaned adds"}
	}
	r.timeout, r.foreign = inv.Options.Timeout, foreign
	return r
}

// foreignTypes returns the types a set or create command gives an Interface that are not OVS
// types.
func foreignTypes(c *cli.Command) []string {
	var assigns []string
	switch c.Spec.Name {
	case "set":
		if len(c.Args) < 2 || !namesInterface(c.Args[0]) {
			return nil
		}
		assigns = c.Args[2:]
	case "create":
		if len(c.Args) < 1 || !namesInterface(c.Args[0]) {
			return nil
		}
		assigns = c.Args[1:]
	default:
		return nil
	}
	var out []string
	for _, a := range assigns {
		col, key, val, ok := splitAssign(a)
		if ok && !key && namesType(col) && !IsOVSInterfaceType(val) {
			out = append(out, val)
		}
	}
	return out
}

// addPortShape returns the daemon route when inv is exactly the routed add-port shape, else
// why it is not.
func addPortShape(inv *cli.Invocation) (Route, string) {
	const shape = "ports of a plugin's type must be added alone: " +
		"add-port BRIDGE PORT -- set Interface PORT type=TYPE [options:KEY=VALUE]... [external_ids:KEY=VALUE]... " +
		"(with --may-exist to update it)"
	if len(inv.Commands) != 2 {
		return Route{}, shape
	}
	add, set := &inv.Commands[0], &inv.Commands[1]
	if add.Spec.Name != "add-port" || len(add.Args) != 2 || set.Spec.Name != "set" ||
		len(set.Options) != 0 || len(set.Args) < 3 || !namesInterface(set.Args[0]) || set.Args[1] != add.Args[1] {
		return Route{}, shape
	}
	for _, o := range add.Options {
		if o.Name != "--may-exist" {
			return Route{}, fmt.Sprintf("%s is not supported for a port of a plugin's type; %s", o.Name, shape)
		}
	}
	in := model.Interface{Name: add.Args[1]}
	typed := false
	for _, a := range set.Args[2:] {
		col, keyed, val, ok := splitAssign(a)
		switch {
		case ok && !keyed && namesType(col):
			in.Type, typed = val, true
		case ok && keyed && col.name == "options":
			in.Options = setKey(in.Options, col.key, val)
		case ok && keyed && col.name == "external_ids":
			in.ExternalIDs = setKey(in.ExternalIDs, col.key, val)
		default:
			return Route{}, fmt.Sprintf("%q cannot be set on a port of a plugin's type from vsctl; %s", a, shape)
		}
	}
	if !typed || IsOVSInterfaceType(in.Type) {
		return Route{}, shape
	}
	return Route{Kind: RouteDaemon, Type: in.Type, Bridge: add.Args[0], MayExist: add.Has("--may-exist"),
		Port: model.Port{Name: add.Args[1], Interfaces: []model.Interface{in}}}, ""
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// column is the left side of an assignment: a column name as typed and a map key.
type column struct{ name, key string }

// splitAssign splits "COLUMN=VALUE" or "COLUMN:KEY=VALUE" as ovs-vsctl's set reads it, with
// KEY and VALUE unquoted when written as quoted strings. ok is false for anything else
// (operators other than "=", malformed quoting).
func splitAssign(a string) (col column, keyed bool, val string, ok bool) {
	i := strings.IndexAny(a, ":=")
	if i <= 0 {
		return column{}, false, "", false
	}
	col.name, a = a[:i], a[i:]
	if a[0] == ':' {
		keyed = true
		k, rest, ok := atom(a[1:], "=")
		if !ok {
			return column{}, false, "", false
		}
		col.key, a = k, rest
	}
	if !strings.HasPrefix(a, "=") {
		return column{}, false, "", false
	}
	v, rest, ok := atom(a[1:], "")
	if !ok || rest != "" {
		return column{}, false, "", false
	}
	return col, keyed, v, true
}

// atom reads one string atom from the front of s: a quoted string, or the text up to the
// first byte of stop (the whole of s when stop is "").
func atom(s, stop string) (v, rest string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", false
		}
		v, err = strconv.Unquote(q)
		return v, s[len(q):], err == nil
	}
	if stop == "" {
		return s, "", true
	}
	i := strings.IndexAny(s, stop)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i:], true
}

// namesInterface reports whether ovs-vsctl resolves table name s to Interface: "Interface"
// in any case ("-" for "_" makes no difference here) or a prefix of it long enough not to
// match IPFIX too.
func namesInterface(s string) bool {
	return len(s) >= 2 && strings.HasPrefix("interface", strings.ToLower(s))
}

// namesType reports whether ovs-vsctl resolves column name c of Interface to type: "type" or
// a prefix of it (no other Interface column starts with "t"), in any case.
func namesType(c column) bool {
	return c.name != "" && strings.HasPrefix("type", strings.ToLower(c.name))
}
