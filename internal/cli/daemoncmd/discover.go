package daemoncmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/model"
)

// DaemonOption is the option naming ovsplaned's API address on any vsctl line:
// --daemon=ADDR (or --daemon ADDR) among the global options.
const DaemonOption = "daemon"

// CutDaemon removes --daemon=ADDR from the global options of an ovs-vsctl command line (args,
// program name first) and returns ADDR ("" when absent) and the line without it, for
// RoutePort (Env.Daemon) and for ovs-vsctl's implementation, which does not know the option.
// The option is accepted on every line; only a line routed to the daemon uses it.
func CutDaemon(args []string) (addr string, rest []string, err error) {
	if len(args) < 2 {
		return "", args, nil
	}
	v, found, tail, err := cli.CutOption(args[1:], DaemonOption)
	if err != nil {
		return "", nil, err
	}
	if found && v == "" {
		return "", nil, errors.New("option '--daemon' needs an address: unix:PATH or tcp:HOST:PORT")
	}
	return v, append([]string{args[0]}, tail...), nil
}

// Discover returns where a routed line goes: Env.Daemon (--daemon), else $OVSPLANE_API, else
// the daemon's default address (model.DefaultAPIAddr) when its socket exists. found is false
// when none applies: no daemon on this host that vsctl can know of. It costs one stat and no
// connection.
func Discover(env Env) (addr string, found bool) {
	if env.Daemon != "" {
		return env.Daemon, true
	}
	if env.Getenv != nil {
		if a := env.Getenv(envAddr); a != "" {
			return a, true
		}
	}
	addr = model.DefaultAPIAddr()
	stat := env.Stat
	if stat == nil {
		stat = os.Stat
	}
	_, err := stat(strings.TrimPrefix(addr, "unix:"))
	return addr, err == nil
}

// ifaceTypesTimeout bounds the look-up of the running Open vSwitch's interface types when the
// line sets no shorter -t.
const ifaceTypesTimeout = 5 * time.Second

// ovsHas reports whether the running ovs-vswitchd lists every type outside OVSInterfaceTypes
// that r's line sets (a newer Open vSwitch's type): then the line is ovs-vsctl's. When the
// types cannot be read (no database, no Env.IfaceTypes) the fixed list decides (false), and
// lookupErr says why.
func ovsHas(ctx context.Context, env Env, r Route) (has bool, lookupErr error) {
	if env.IfaceTypes == nil || len(r.foreign) == 0 {
		return false, errors.New("not looked up")
	}
	limit := ifaceTypesTimeout
	if t := r.Timeout(""); t > 0 && t < limit {
		limit = t
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	types, err := env.IfaceTypes(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range r.foreign {
		if !slices.Contains(types, t) {
			return false, nil
		}
	}
	return true, nil
}

// noDaemon is the refusal of a line setting interface type typ, which neither Open vSwitch
// nor a daemon vsctl knows of provides; lookupErr is why the running Open vSwitch's types
// could not be read (nil: they were, without typ).
func noDaemon(typ string, lookupErr error) string {
	ovs := "this ovs-vswitchd does not list it in Open_vSwitch.iface_types"
	if lookupErr != nil {
		ovs = fmt.Sprintf("not in vsctl's list; the running Open vSwitch's iface_types could not be read: %v", lookupErr)
	}
	return fmt.Sprintf("interface type %q is not an Open vSwitch type (%s) "+
		"and no ovsplaned was found to add it as a plugin's port (no --daemon=ADDR, no $%s, no socket at %s); nothing was written. "+
		"If a plugin provides %q, point vsctl at the ovsplaned running it: --daemon=unix:DATA_DIR/%s (or its api.listen address) or $%s; "+
		"otherwise correct the type",
		typ, ovs, envAddr, strings.TrimPrefix(model.DefaultAPIAddr(), "unix:"), typ, model.SocketName, envAddr)
}
