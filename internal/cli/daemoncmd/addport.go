package daemoncmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/model"
)

// RoutePort runs an ovs-vsctl command line (Env.Args, program name first, with --daemon
// already cut: see CutDaemon) that Classify does not leave to OVSDB, and returns its exit
// status; handled is false when the line is ovs-vsctl's to run, unchanged. That is the case for
// every line naming only Open vSwitch interface types: those of OVSInterfaceTypes, decided
// without any I/O, and those the running ovs-vswitchd lists in Open_vSwitch.iface_types
// (Env.IfaceTypes, asked only for a line naming a type outside OVSInterfaceTypes).
//
// Any other type is taken for a plugin's. The line goes to the daemon found by Discover
// (Env.Daemon, $OVSPLANE_API, or the default socket when it exists); with no daemon found it is
// refused, naming the type and how to point vsctl at ovsplaned, and nothing is written.
//
// A routed add-port prints nothing and exits 0, as ovs-vsctl's does; an interface the daemon
// reports in error gets ovs-vsctl's "Error detected while setting up" warning on standard
// error, still with exit 0. Everything else (a refused shape, no daemon, the daemon
// unreachable, the daemon's refusal) is one message on standard error and exit 1.
func RoutePort(ctx context.Context, env Env) (code int, handled bool) {
	if len(env.Args) < 2 {
		return 0, false
	}
	r := Classify(env.Args[1:])
	if r.Kind == RouteOVSDB {
		return 0, false
	}
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	has, lookupErr := ovsHas(ctx, env, r)
	if has {
		return 0, false
	}
	prog := progName(env)
	addr, found := Discover(env)
	if !found {
		fmt.Fprintf(env.Stderr, "%s: %s\n", prog, noDaemon(r.Type, lookupErr))
		return 1, true
	}
	if r.Kind == RouteRefuse {
		fmt.Fprintf(env.Stderr, "%s: interface type %q is not an Open vSwitch type: %s\n", prog, r.Type, r.Why)
		return 1, true
	}
	if t := r.Timeout(getenv("OVS_CTL_TIMEOUT")); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	c, err := dialAPI(addr, model.TLS{})
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: ovsplaned address %q: %v\n", prog, addr, err)
		return 1, true
	}
	defer c.Close()
	warn, err := addPluginPort(ctx, c, r)
	switch {
	case errors.Is(err, errUnreachable):
		fmt.Fprintf(env.Stderr, "%s: interface type %q is not an Open vSwitch type; if a plugin provides it, ovsplaned must be running (cannot reach it at %s: %s); nothing was written\n",
			prog, r.Type, addr, unreachableCause(err))
		return 1, true
	case err != nil:
		fmt.Fprintf(env.Stderr, "%s: %s\n", prog, describe(err, addr))
		return 1, true
	case warn != "":
		fmt.Fprintf(env.Stderr, "%s: %s\n%s: The default log directory is \"%s\".\n", prog, warn, prog, logDir(getenv))
	}
	return 0, true
}

// Timeout returns the limit ovs-vsctl would apply to the line (-t, else $OVS_CTL_TIMEOUT
// given as ctlTimeoutEnv); 0 for none.
func (r Route) Timeout(ctlTimeoutEnv string) time.Duration {
	o := cli.Options{Timeout: r.timeout}
	return time.Duration(o.EffectiveTimeout(ctlTimeoutEnv)) * time.Second
}

// addPluginPort adds (or with --may-exist updates) the routed port and returns ovs-vsctl's
// warning for an interface that was not set up ("" when it was). Without --may-exist a port
// the daemon already manages is refused as ovs-vsctl refuses an existing port; with it, the
// port must be on the same bridge with the one interface, whose type is set and whose
// options and external_ids get the keys given (others kept), as ovs-vsctl's set would.
func addPluginPort(ctx context.Context, c *apiClient, r Route) (warn string, err error) {
	port := r.Port
	// The daemon's own check (names, bytes, sizes of package limits), here first, so that a
	// request it would refuse is not sent at all.
	if err := checkPort(r.Bridge, port); err != nil {
		return "", err
	}
	got, err := c.getPort(ctx, port.Name)
	switch {
	case isNotFound(err):
	case err != nil:
		return "", err
	default:
		if port, err = mayExist(r, model.PortInfo{Bridge: got.Bridge, Spec: portFromWire(got.Spec)}); err != nil {
			return "", err
		}
	}
	if err := checkPort(r.Bridge, port); err != nil {
		return "", err
	}
	info, err := c.applyPort(ctx, r.Bridge, port)
	if err != nil {
		return "", err
	}
	for _, st := range info.Interfaces {
		if st.Name != r.Port.Name || st.Ofport > 0 {
			continue
		}
		if e := st.Error; e != "" {
			return fmt.Sprintf("Error detected while setting up '%s': %s.  See ovs-vswitchd log for details.", st.Name, e), nil
		}
		return fmt.Sprintf("Error detected while setting up '%s'.  See ovs-vswitchd log for details.", st.Name), nil
	}
	return "", nil
}

// mayExist checks the daemon's port against the routed add-port as ovs-vsctl checks an
// existing port, with its messages, and returns the port to apply: the existing one with the
// interface's type set and the options and external_ids keys given changed.
func mayExist(r Route, have model.PortInfo) (model.Port, error) {
	name := r.Port.Name
	command := "add-port " + r.Bridge + " " + name
	if !r.MayExist {
		return model.Port{}, fmt.Errorf("cannot create a port named %s because a port named %s already exists on bridge %s", name, name, have.Bridge)
	}
	if have.Bridge != r.Bridge {
		return model.Port{}, fmt.Errorf("\"--may-exist %s\" but %s is actually attached to bridge %s", command, name, have.Bridge)
	}
	p := have.Spec
	if len(p.Interfaces) != 1 || p.Interfaces[0].Name != name {
		names := make([]string, 0, len(p.Interfaces))
		for _, in := range p.Interfaces {
			names = append(names, in.Name)
		}
		slices.Sort(names)
		return model.Port{}, fmt.Errorf("\"--may-exist %s\" but %s actually has interface(s) %s", command, name, strings.Join(names, ", "))
	}
	p.Interfaces = slices.Clone(p.Interfaces)
	in, want := &p.Interfaces[0], r.Port.Interfaces[0]
	in.Type = want.Type
	in.Options = merge(in.Options, want.Options)
	in.ExternalIDs = merge(in.ExternalIDs, want.ExternalIDs)
	return p, nil
}

// merge returns a copy of m with the keys of set set; nil when both are empty.
func merge(m, set map[string]string) map[string]string {
	if len(m)+len(set) == 0 {
		return nil
	}
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, set)
	return out
}

// unreachableCause is the connection error under an unreachable daemon's, like "dial unix
// /var/lib/ovsplane/ovsplaned.sock: connect: no such file or directory".
func unreachableCause(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": dial "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

func logDir(getenv func(string) string) string {
	if d := getenv("OVS_LOGDIR"); d != "" {
		return d
	}
	return "/var/log/openvswitch"
}
