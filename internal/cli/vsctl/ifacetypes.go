package vsctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// IfaceTypes reads the interface types the running ovs-vswitchd supports
// (Open_vSwitch.iface_types) from the database the command line env.Args would use: its --db
// and SSL options, else the default socket under $OVS_RUNDIR. It is one connection and one
// select, bounded by ctx, and never retries (whatever --retry says). An empty list means
// ovs-vswitchd has not reported its types (it is not running). vsctl asks only for a line
// that names a type outside the stock list, to tell a newer Open vSwitch's type from a
// plugin's.
func IfaceTypes(ctx context.Context, env Env) ([]string, error) {
	p := newProgram(env)
	if len(env.Args) < 1 {
		return nil, errors.New("no command line")
	}
	inv, err := cli.Parse(env.Args[1:])
	if err != nil {
		return nil, err
	}
	opts := inv.Options
	opts.Retry = false
	conn, err := p.dial(ctx, &opts, "unix:"+p.rundir()+"/db.sock")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := dbcmd.New(conn, vswitchSchema()).All(ctx, "Open_vSwitch", "iface_types")
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	d, ok := rows[0].Loaded("iface_types")
	if !ok {
		return nil, fmt.Errorf("Open_vSwitch.iface_types was not read")
	}
	out := make([]string, 0, len(d.Keys))
	for _, k := range d.Keys {
		out = append(out, k.Str)
	}
	return out, nil
}
