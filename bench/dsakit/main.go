// Command dsakit measures OVS-DPDK with and without Intel DSA offload of the vhost-user copies on
// a host that has the hardware, and writes the result as a table in docs/benchmarks.md's format.
//
// Matrix: every configured frame size (default 64 128 256 512 1024 1518 9000 B) × every
// configured scenario (typically "PVP" and "VM-to-VM same node") × DSA off and on. Per cell it
// reports Mpps, Gbit/s, PMD busy cycles and, per size, the on/off ratio, so the 1.117× claim of
// issue 15 can be checked.
//
// Usage:
//
//	dsakit --config kit.json [--out result.md] [--timeout 4h]
//	dsakit --dry-run --config kit.json --samples DIR [--out result.md]
//
// The configuration (Config) names the ovs-vsctl / ovs-appctl argv, how to restart
// ovs-vswitchd, and per scenario the setup, traffic and teardown commands, each an argv run
// without a shell. For each scenario and mode the kit writes
// other_config:vhost-async-support, restarts ovs-vswitchd, waits until it answers, checks the
// build really has vhost async (netdev-dpdk/set-vhost-async-thresh in list-commands) and that
// work queues exist before measuring "on", and checks afterwards that the vhost_async coverage
// counters moved. Per size it starts the generator in the background, waits out the warm-up,
// clears the PMD statistics, snapshots the interfaces' tx counters and the coverage counters,
// waits the window, snapshots again and reads dpif-netdev/pmd-stats-show.
//
// --dry-run executes nothing: it prints the plan of every step and answers each command whose
// output is parsed with the recorded output in --samples/<off|on>/, so parsing and rendering
// run exactly as on hardware. Every step is printed to stderr in both modes; the report goes to
// --out (default stdout). Exit status: 0 when the matrix completed, 1 when it stopped (the
// report then shows what was measured and why it stopped), 2 on bad usage or configuration.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it parses args, runs the kit and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dsakit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "kit configuration (JSON, see docs/dsa.md)")
	out := fs.String("out", "", "write the markdown report here instead of stdout")
	dry := fs.Bool("dry-run", false, "print the plan and render from recorded outputs; run nothing")
	samples := fs.String("samples", "", "with --dry-run: directory of recorded outputs (off/ and on/)")
	timeout := fs.Duration("timeout", 6*time.Hour, "bound of the whole run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *configPath == "" || fs.NArg() != 0 || (*dry != (*samples != "")) || *timeout <= 0 || *timeout > 48*time.Hour {
		fmt.Fprintln(stderr, "usage: dsakit --config FILE [--out FILE] [--timeout D]\n       dsakit --dry-run --samples DIR --config FILE [--out FILE]")
		return 2
	}
	f, err := os.Open(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "dsakit: %v\n", err)
		return 2
	}
	cfg, err := LoadConfig(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	info := reportInfo{Config: cfg, DryRun: *dry, When: "Run of " + time.Now().UTC().Format("2006-01-02 15:04 MST"),
		Command: "make dsa-kit DSA_KIT_CONFIG=" + *configPath}
	var ex executor = execRunner{}
	if *dry {
		ex = &dryRunner{dir: *samples}
		info.When = "Plan of a run"
		info.Command = "make dsa-kit-dryrun"
		fmt.Fprintf(stderr, "dsakit: DRY RUN: nothing is executed; parsed outputs come from %s\n", *samples)
	}
	k := &kit{cfg: cfg, ex: ex, plan: stderr}
	ms, runErr := k.Run(ctx)
	info.Err = runErr

	if err := emit(*out, stdout, info, ms); err != nil {
		fmt.Fprintf(stderr, "dsakit: write report: %v\n", err)
		return 1
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "%s\n", strings.TrimSpace(runErr.Error()))
		return 1
	}
	return 0
}

// emit writes the report to the file out, or to stdout when out is empty.
func emit(out string, stdout io.Writer, info reportInfo, ms []Measurement) error {
	if out == "" {
		return writeReport(stdout, info, ms)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := writeReport(f, info, ms); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
