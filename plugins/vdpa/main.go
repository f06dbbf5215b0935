// Command ovsplane-plugin-vdpa is ovsplane's plugin for ports of type "vdpa": mlx5 vDPA ports
// (ConnectX-6 Dx, BlueField in NIC mode) for VMs, attached to Open vSwitch as the VF
// representor. ovsplaned starts it (see docs/vdpa.md, "The plugin binary"); run by hand it
// says so and exits, unless OVSPLANE_PLUGIN_DEBUG=1 is set (debug mode).
//
// It also answers one question by hand, read-only:
//
//	ovsplane-plugin-vdpa --detect [--json] [--root DIR | --simulate FIXTURE]
//
// prints what this host supports for each mode, and why not (the library's Detect report), and
//
//	ovsplane-plugin-vdpa --plan [--json] [--name NAME] [--root DIR | --simulate FIXTURE] pf=… [vf=… mode=… …]
//
// prints, without doing any of it, what attaching a port with those options would do on this
// host (the library's dry-run Plan): the ordered steps with their reasons, the OVS interface and
// the guest endpoint.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/ovsplane/ovsplane/internal/cli/cliconv"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/plugins/vdpa/internal/vdpaplugin"
	"github.com/ovsplane/ovsplane/vdpa"
)

func main() {
	if len(os.Args) > 1 {
		os.Exit(runCLI(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Standard output belongs to go-plugin's handshake: log to standard error only.
	level := slog.LevelInfo
	if os.Getenv(sdk.DebugEnv) == "1" {
		level = slog.LevelDebug
	}
	p := vdpaplugin.New(vdpaplugin.Options{Logger: sdk.NewLogger(os.Stderr, level)})
	defer p.Close()
	sdk.Serve(p)
}

// runCLI runs the command-line mode and returns the exit status: 0 on success, 1 when the host
// cannot be read or the plan fails, 2 on a usage error (bad flags or options).
func runCLI(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ovsplane-plugin-vdpa", flag.ContinueOnError)
	// cliconv prints help and errors: the flag set prints nothing itself.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	version := fs.Bool("version", false, cliconv.VersionFlagUsage)
	detect := fs.Bool("detect", false, "print what this host supports for vDPA ports, and why not (read-only)")
	plan := fs.Bool("plan", false, "print what attaching a port with the key=value options given would do (dry run, read-only)")
	asJSON := fs.Bool("json", false, "with --detect or --plan: print JSON")
	name := fs.String("name", "vdpa0", "with --plan: the port's (interface's) name, the vDPA device's default name")
	root := fs.String("root", vdpaplugin.DefaultRoot, "the directory holding sys/, dev/ and proc/")
	simulate := fs.String("simulate", "", "read a vdpa fixture file in a simulated kernel instead of this host")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: ovsplane-plugin-vdpa --detect [--json] [--root DIR | --simulate FIXTURE]")
		fmt.Fprintln(w, "       ovsplane-plugin-vdpa --plan [--json] [--name NAME] [--root DIR | --simulate FIXTURE] pf=PF [vf=N] [mode=kernel|dpdk-pmd|ovs-fork] [mac=…] [key=value…]")
		fmt.Fprintln(w, "Without arguments the plugin serves ovsplaned, which starts it.")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if code, done := cliconv.Parsed("ovsplane-plugin-vdpa", fs.Parse(args), stdout, stderr, usage); done {
		return code
	}
	if *version {
		cliconv.PrintVersion(stdout, "ovsplane-plugin-vdpa")
		return 0
	}
	switch {
	case *detect && !*plan && fs.NArg() == 0:
		if err := runDetect(detectOptions{Root: *root, Simulate: *simulate, JSON: *asJSON}, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "ovsplane-plugin-vdpa: %v\n", err)
			return 1
		}
		return 0
	case *plan && !*detect && fs.NArg() > 0:
		opts, err := parseKeyValues(fs.Args())
		if err != nil {
			fmt.Fprintf(stderr, "ovsplane-plugin-vdpa: --plan: %v\n", err)
			return 2
		}
		err = runPlan(planOptions{Root: *root, Simulate: *simulate, Name: *name, JSON: *asJSON, Options: opts}, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "ovsplane-plugin-vdpa: %v\n", err)
			if vdpa.CodeOf(err) == vdpa.CodeInvalidRequest {
				return 2
			}
			return 1
		}
		return 0
	}
	usage(stderr)
	return 2
}
