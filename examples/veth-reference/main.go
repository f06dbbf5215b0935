// Command ovsplane-plugin-veth is ovsplane's reference plugin: the port type
// "veth" (a veth pair whose host end is attached to the bridge and whose peer end is optionally
// moved into a named network namespace with an address) and every capability of the plugin
// contract put to a real use. See README.md beside this file.
//
// ovsplaned starts it; run by hand it says so and exits, unless OVSPLANE_PLUGIN_DEBUG=1 is set
// (debug mode: it serves on a unix socket and prints the line to hand to ovsplaned).
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/vethplugin"
	"github.com/ovsplane/ovsplane/internal/cli/cliconv"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

func main() {
	// ovsplaned starts the plugin without arguments; arguments are the command line's
	// conventions only (--help, --version).
	if len(os.Args) > 1 {
		os.Exit(runCLI(os.Args[1:], os.Stdout, os.Stderr))
	}
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

// runCLI handles the command line: --help and --version (exit 0); anything else is a usage
// error (exit 2), as the plugin has no command of its own.
func runCLI(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ovsplane-plugin-veth", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	version := fs.Bool("version", false, cliconv.VersionFlagUsage)
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: ovsplane-plugin-veth --help | --version")
		fmt.Fprintln(w, "Without arguments the plugin serves ovsplaned, which starts it (see README.md).")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if code, done := cliconv.Parsed("ovsplane-plugin-veth", fs.Parse(args), stdout, stderr, usage); done {
		return code
	}
	if !*version || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "ovsplane-plugin-veth: the plugin takes no arguments but --help and --version")
		usage(stderr)
		return cliconv.ExitUsage
	}
	cliconv.PrintVersion(stdout, "ovsplane-plugin-veth")
	return 0
}
