// Command ovsplane-plugin-flowmon is ovsplane's plugin "flowmon" (issue 18, docs/flowmon.md):
// job types flowmon-collector (OVS's NetFlow v5/v9 and IPFIX export received, decoded, named
// and stored, embedded DuckDB or PostgreSQL, queries answered on a unix socket) and flowmon-gen
// (a traffic generator run with per-flow receive counts). ovsplaned starts it; run by hand
// without arguments it says so and exits, unless OVSPLANE_PLUGIN_DEBUG=1 is set (debug mode).
//
// It is also the flowmon command line (`alias flowmon=ovsplane-plugin-flowmon`):
//
//	flowmon query [TARGET] [--since 1h | --from T --to T] [--src CIDR] [--dst CIDR] [--sport P]
//	              [--dport P] [--proto tcp] [--bridge B] [--port P] [--exporter IP]
//	              [--top KEY --by bytes|packets|flows -n N | --series 1m --by ...]
//	              [--format table|json|csv]
//	flowmon top   [TARGET] [--interval 1s] [--window 10s] [-n 10] [--by bytes] [--once]
//	flowmon gen   --interface IF [--receive-interface IF] [--frame-size 64] [--flows 16]
//	              [--rate PPS] [--duration 10s] [--src IP] [--dst IP] [--format table|json]
//	flowmon check collector|gen FILE|JSON
//
// TARGET is where queries go: --socket PATH (a collector job's query socket), --job NAME (that
// job's socket in --data-dir's plugin-data/flowmon; default data dir /var/lib/ovsplane), or
// --daemon unix:PATH (the daemon's API, which forwards to the collector). Without one, the only
// collector socket in the data dir is asked. gen runs one generator in this process (it needs
// CAP_NET_RAW) and prints its report; a flowmon-gen job runs the same inside the daemon's
// plugin. Exit status: 0 done, 1 the collector (or the generator) failed, 2 a usage error or an
// invalid query or configuration.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/cliconv"
	"github.com/ovsplane/ovsplane/plugins/flowmon/internal/flowmonplugin"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// closeGrace bounds the stop of the jobs when the host is done with the plugin.
const closeGrace = 10 * time.Second

func main() {
	// The daemon starts plugins without arguments (argv[0] is the plugin's name, "flowmon"), so
	// only arguments select the command line.
	if len(os.Args) > 1 {
		os.Exit(runCLI(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	// Standard output belongs to go-plugin's handshake: log to standard error only.
	level := slog.LevelInfo
	if os.Getenv(sdk.DebugEnv) == "1" {
		level = slog.LevelDebug
	}
	log := sdk.NewLogger(os.Stderr, level)
	p := flowmonplugin.New(flowmonplugin.Options{Logger: log, OpenStore: openStore})
	sdk.Serve(p)
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		log.Warn("stopping the flowmon jobs", "err", err)
	}
}

// usage is the command line's synopsis.
const usage = `usage: flowmon query [--socket PATH | --job NAME [--data-dir DIR] | --daemon unix:PATH] [filters] [--top KEY | --series INTERVAL] [--format table|json|csv]
       flowmon top   [target] [--interval 1s] [--window 10s] [-n 10] [--by bytes|packets|flows] [--once]
       flowmon gen   --interface IF [--receive-interface IF] [--frame-size 64] [--flows 16] [--rate PPS] [--duration 10s] [--format table|json]
       flowmon check collector|gen FILE|JSON
Without arguments (as ovsplane-plugin-flowmon) the plugin serves ovsplaned, which starts it.
'flowmon --version' prints the version; 'flowmon COMMAND -h' lists a command's flags; docs/flowmon.md has examples.`

// runCLI runs the command-line mode and returns the exit status.
func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "query":
		return runQuery(ctx, args[1:], stdout, stderr)
	case "top":
		return runTop(ctx, args[1:], stdout, stderr)
	case "gen":
		return runGen(ctx, args[1:], stdout, stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	case "-version", "--version", "version":
		cliconv.PrintVersion(stdout, "ovsplane-plugin-flowmon")
		return 0
	}
	fmt.Fprintf(stderr, "flowmon: unknown command %q\n%s\n", args[0], usage)
	return 2
}
