// Command ovsplane-plugin-veth is ovsplane's reference plugin: the port type
// "veth" (a veth pair whose host end is attached to the bridge and whose peer end is optionally
// moved into a named network namespace with an address) and every capability of the plugin
// contract put to a real use. See README.md beside this file.
//
// ovsplaned starts it; run by hand it says so and exits, unless OVSPLANE_PLUGIN_DEBUG=1 is set
// (debug mode: it serves on a unix socket and prints the line to hand to ovsplaned).
package main

import (
	"log/slog"
	"os"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/vethplugin"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

func main() {
	// Standard output belongs to go-plugin's handshake: log to standard error only.
	level := slog.LevelInfo
	if os.Getenv(sdk.DebugEnv) == "1" {
		level = slog.LevelDebug
	}
	log := sdk.NewLogger(os.Stderr, level)
	if err := run(log); err != nil {
		log.Error("cannot start", "err", err)
		os.Exit(1)
	}
}

// run builds the plugin and serves it until the host is done with it.
func run(log *slog.Logger) error {
	// The kernel side, built at Configure: host ends in ovs-vswitchd's namespace (the
	// configuration's host_netns, by default this process's, i.e. ovsplaned's), named
	// namespaces under /run/netns.
	newLinks := func(hostNetns string) (vethplugin.Links, error) {
		return veth.New(veth.Config{Owner: vethplugin.Name, HostNetns: hostNetns, Logger: log})
	}
	p, err := vethplugin.New(vethplugin.Options{NewLinks: newLinks, Logger: log})
	if err != nil {
		return err
	}
	defer p.Close()
	sdk.Serve(p)
	return nil
}
