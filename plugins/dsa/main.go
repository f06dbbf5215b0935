// Command ovsplane-plugin-dsa is ovsplane's plugin "dsa": Intel Data Streaming Accelerator
// (DSA) devices provisioned for OVS-DPDK's vhost async copies, wired into Open vSwitch only when
// the running ovs-vswitchd can use them, and a status on every vhost-user port saying whether
// its copies are offloaded and why not (see docs/dsa.md). ovsplaned starts it; run by hand it
// says so and exits, unless OVSPLANE_PLUGIN_DEBUG=1 is set (debug mode).
//
// It also answers two questions by hand, read-only:
//
//	ovsplane-plugin-dsa --detect [--json] [--root DIR | --simulate DIR [--simulate-variant V]] [--ovs-rundir DIR | --ovs-ctl PATH]
//
// prints what this host (DSA devices, drivers, PASID, NUMA, clients, work queues) and the
// running ovs-vswitchd (through its unixctl socket: vhost async or not, PMD threads) can do, in
// plain words — the socket found in --ovs-rundir, or the one --ovs-ctl names for an
// ovs-vswitchd started with --unixctl=PATH (ZStack's ovs-vswitchd.zs.ctl) — and
//
//	ovsplane-plugin-dsa --plan [--json] --config FILE|JSON [--root DIR | --simulate DIR [--simulate-variant V]] [--ovs-rundir DIR] [--dpdk-extra ARGS]
//
// prints what the plugin would write for a configuration (the plugin's config object, as a
// file or inline JSON), without writing it: the permission steps for the OVS user (ovs.user,
// else the owner of ovs-vswitchd's pidfile in --ovs-rundir) and the work queue names for the
// --file-prefix in --dpdk-extra, as the plugin would;
//
//	ovsplane-plugin-dsa --export-accel-config [--root DIR | --simulate DIR [--simulate-variant V]]
//
// prints the host's DSA configuration as an accel-config JSON file, and
//
//	ovsplane-plugin-dsa --plan [--json] --import-accel-config FILE [--root DIR | --simulate DIR] [--ovs-rundir DIR] [--dpdk-extra ARGS]
//
// plans adopting an accel-config file (a host already set up as it says plans nothing). Exit status: 0 done, 1 the host could not be read
// or the plan failed, 2 a usage error or an invalid configuration.
//
// The environment variable OVSPLANE_DSA_TEST_PAUSE (dsaplugin.PauseEnv) is a testing hook that
// acts only on a simulated machine (config simulate); see dsaplugin.PauseEnv.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/cli/cliconv"

	"github.com/ovsplane/ovsplane/plugins/dsa/internal/dsaplugin"
	"github.com/ovsplane/ovsplane/plugins/sdk"
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
	p := dsaplugin.New(dsaplugin.Options{Logger: sdk.NewLogger(os.Stderr, level), TestPause: os.Getenv(dsaplugin.PauseEnv)})
	sdk.Serve(p)
}

// DefaultOVSRunDir is --ovs-rundir's default, where Debian's ovs-vswitchd keeps its pidfile and
// unixctl socket.
const DefaultOVSRunDir = "/var/run/openvswitch"

// variantList names the simulated host variants, for the usage text.
func variantList() string {
	var names []string
	for _, v := range simidxd.Variants() {
		names = append(names, string(v))
	}
	return strings.Join(names, ", ")
}

// runCLI runs the command-line mode and returns the exit status: 0 on success, 1 when the host
// cannot be read or the plan fails, 2 on a usage error or an invalid configuration.
func runCLI(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ovsplane-plugin-dsa", flag.ContinueOnError)
	// cliconv prints help and errors: the flag set prints nothing itself.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	version := fs.Bool("version", false, cliconv.VersionFlagUsage)
	detect := fs.Bool("detect", false, "print what this host and the running ovs-vswitchd can do with DSA (read-only)")
	plan := fs.Bool("plan", false, "print what the plugin would write for --config (dry run, read-only)")
	asJSON := fs.Bool("json", false, "with --detect or --plan: print JSON")
	config := fs.String("config", "", "with --plan: the plugin's configuration, a file or inline JSON ({\"devices\": [...]})")
	root := fs.String("root", "", `the directory holding sys/ and dev/ (default "/")`)
	simulate := fs.String("simulate", "", "read the simulated idxd kernel in this directory (dsa/simidxd) instead of this host")
	variant := fs.String("simulate-variant", "", "with --simulate: lay out a simulated host of this variant ("+variantList()+") in the directory first when it is empty or absent")
	rundir := fs.String("ovs-rundir", DefaultOVSRunDir, "with --detect: ovs-vswitchd's run directory (pidfile and unixctl socket); with --plan: where its pidfile tells the OVS user when the configuration has no ovs.user")
	export := fs.Bool("export-accel-config", false, "print this host's DSA configuration (or --simulate's) as an accel-config JSON file (read-only)")
	importFile := fs.String("import-accel-config", "", "with --plan: plan adopting this accel-config JSON file instead of --config")
	dpdkExtra := fs.String("dpdk-extra", "", "with --plan: OVS's other_config:dpdk-extra, for its --file-prefix (the work queue name prefix)")
	ctl := fs.String("ovs-ctl", "", "with --detect: ovs-vswitchd's unixctl socket, when it was started with --unixctl=PATH (instead of finding one in --ovs-rundir)")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: ovsplane-plugin-dsa --detect [--json] [--root DIR | --simulate DIR [--simulate-variant V]] [--ovs-rundir DIR | --ovs-ctl PATH]")
		fmt.Fprintln(w, "       ovsplane-plugin-dsa --plan [--json] --config FILE|JSON [--root DIR | --simulate DIR [--simulate-variant V]] [--ovs-rundir DIR] [--dpdk-extra ARGS]")
		fmt.Fprintln(w, "       ovsplane-plugin-dsa --plan [--json] --import-accel-config FILE [--root DIR | --simulate DIR] [--ovs-rundir DIR] [--dpdk-extra ARGS]")
		fmt.Fprintln(w, "       ovsplane-plugin-dsa --export-accel-config [--root DIR | --simulate DIR]")
		fmt.Fprintln(w, "Without arguments the plugin serves ovsplaned, which starts it.")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if code, done := cliconv.Parsed("ovsplane-plugin-dsa", fs.Parse(args), stdout, stderr, usage); done {
		return code
	}
	if *version {
		cliconv.PrintVersion(stdout, "ovsplane-plugin-dsa")
		return 0
	}
	if *root != "" && *simulate != "" {
		fmt.Fprintln(stderr, "ovsplane-plugin-dsa: --root and --simulate exclude each other: a simulation has its own root")
		return 2
	}
	if *variant != "" {
		if *simulate == "" {
			fmt.Fprintln(stderr, "ovsplane-plugin-dsa: --simulate-variant goes with --simulate DIR (the directory the simulated host is laid out in)")
			return 2
		}
		if _, err := simidxd.Ensure(*simulate, simidxd.Variant(*variant)); err != nil {
			fmt.Fprintf(stderr, "ovsplane-plugin-dsa: --simulate-variant %.40q: %v\n", *variant, err)
			return 2
		}
	}
	rundirSet := false
	fs.Visit(func(f *flag.Flag) { rundirSet = rundirSet || f.Name == "ovs-rundir" })
	if *ctl != "" {
		switch {
		case rundirSet:
			fmt.Fprintln(stderr, "ovsplane-plugin-dsa: --ovs-rundir and --ovs-ctl exclude each other: --ovs-ctl names the socket itself")
			return 2
		case !*detect:
			fmt.Fprintln(stderr, "ovsplane-plugin-dsa: --ovs-ctl goes with --detect (a --plan does not talk to ovs-vswitchd)")
			return 2
		case len(*ctl) > dsaplugin.MaxSocketPath || !filepath.IsAbs(*ctl):
			fmt.Fprintf(stderr, "ovsplane-plugin-dsa: --ovs-ctl %.120q: want the absolute path (at most %d bytes) of ovs-vswitchd's unixctl socket\n", *ctl, dsaplugin.MaxSocketPath)
			return 2
		}
	}
	switch {
	case *detect && !*plan && !*export && fs.NArg() == 0 && *config == "" && *dpdkExtra == "" && *importFile == "":
		o := detectOptions{Root: *root, Simulate: *simulate, OVSRunDir: *rundir, OVSCtl: *ctl, JSON: *asJSON}
		if err := runDetect(o, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "ovsplane-plugin-dsa: %v\n", err)
			return 1
		}
		return 0
	case *export && !*plan && !*detect && fs.NArg() == 0 && *config == "" && *importFile == "" && *dpdkExtra == "":
		return runExportAccelConfig(*root, *simulate, stdout, stderr)
	case *plan && !*detect && !*export && fs.NArg() == 0 && *config == "" && *importFile != "":
		return runImportPlan(planOptions{Root: *root, Simulate: *simulate, Import: *importFile, OVSRunDir: *rundir, DPDKExtra: *dpdkExtra, JSON: *asJSON}, stdout, stderr)
	case *plan && !*detect && !*export && *importFile == "" && fs.NArg() == 0 && *config != "":
		return runPlan(planOptions{Root: *root, Simulate: *simulate, Config: *config, OVSRunDir: *rundir, DPDKExtra: *dpdkExtra, JSON: *asJSON}, stdout, stderr)
	}
	usage(stderr)
	return 2
}
