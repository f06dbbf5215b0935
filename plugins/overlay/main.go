// Command ovsplane-plugin-overlay is ovsplane's plugin "overlay" (issue 17, docs/overlay.md):
// super-node WAN routing over Open vSwitch flow-based tunnels with the fabric state in a
// clustered OVSDB. Job types overlay-agent (one per site: register, follow route versions,
// install them as OpenFlow next-hop forwarding, acknowledge, probe the links) and
// overlay-controller (the controller role), and the port type overlay-tunnel (the flow-based
// tunnel port). ovsplaned starts it; run by hand it says so and exits, unless
// OVSPLANE_PLUGIN_DEBUG=1 is set (debug mode).
//
// By hand it also checks an overlay-agent job's configuration, read-only:
//
//	ovsplane-plugin-overlay --check FILE|JSON
//
// prints what is wrong with it, or "ok" and the node. Exit status: 0 valid, 2 a usage error
// or an invalid configuration.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/cliconv"
	"github.com/ovsplane/ovsplane/plugins/overlay/internal/overlayplugin"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// closeGrace bounds the stop of the jobs when the host is done with the plugin.
const closeGrace = 5 * time.Second

func main() {
	if len(os.Args) > 1 {
		os.Exit(runCLI(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Standard output belongs to go-plugin's handshake: log to standard error only.
	level := slog.LevelInfo
	if os.Getenv(sdk.DebugEnv) == "1" {
		level = slog.LevelDebug
	}
	log := sdk.NewLogger(os.Stderr, level)
	p := overlayplugin.New(overlayplugin.Options{Logger: log})
	sdk.Serve(p)
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		log.Warn("stopping the overlay jobs", "err", err)
	}
}

// runCLI runs the command-line mode and returns the exit status.
func runCLI(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ovsplane-plugin-overlay", flag.ContinueOnError)
	// cliconv prints help and errors: the flag set prints nothing itself.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	version := fs.Bool("version", false, cliconv.VersionFlagUsage)
	check := fs.String("check", "", "check an overlay-agent job's configuration, a file or inline JSON")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: ovsplane-plugin-overlay --check FILE|JSON")
		fmt.Fprintln(w, "Without arguments the plugin serves ovsplaned, which starts it.")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if code, done := cliconv.Parsed("ovsplane-plugin-overlay", fs.Parse(args), stdout, stderr, usage); done {
		return code
	}
	if *version {
		cliconv.PrintVersion(stdout, "ovsplane-plugin-overlay")
		return 0
	}
	if fs.NArg() > 0 || *check == "" {
		usage(stderr)
		return 2
	}
	data, err := readConfig(*check)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg, err := overlayplugin.ParseAgentConfig(data)
	if err != nil {
		fmt.Fprintln(stderr, "invalid overlay-agent configuration:", err)
		return 2
	}
	fmt.Fprintf(stdout, "ok: node %s (%s) on bridge %s through %s, %d fabric remotes\n", cfg.Node.Name, cfg.Node.Kind, cfg.Bridge, cfg.TunnelPort, len(cfg.FabricRemotes))
	return 0
}

// readConfig returns inline JSON as is, or reads the file it names (bounded).
func readConfig(arg string) ([]byte, error) {
	if strings.HasPrefix(strings.TrimSpace(arg), "{") {
		return []byte(arg), nil
	}
	f, err := os.Open(arg)
	if err != nil {
		return nil, fmt.Errorf("--check: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, overlayplugin.MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--check %s: %w", arg, err)
	}
	if len(data) > overlayplugin.MaxConfigBytes {
		return nil, fmt.Errorf("--check %s: more than %d bytes", arg, overlayplugin.MaxConfigBytes)
	}
	return data, nil
}
