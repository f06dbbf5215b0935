// Command ovsplane-plugin-stripe is ovsplane's plugin "stripe" (issue 16, docs/stripe.md): a
// data-path job type "stripe" that stripes traffic between this node and its peers over several
// kernel NICs, one stripe/engine per peer, and reports per-link load, EWMA, balance degree,
// adjusts, reorder depth, drops, retransmits and discovery as job stats (`vsctl plugin stats
// stripe`). ovsplaned starts it; run by hand it says so and exits, unless
// OVSPLANE_PLUGIN_DEBUG=1 is set (debug mode).
//
// By hand it also checks a job's configuration, read-only:
//
//	ovsplane-plugin-stripe --check FILE|JSON
//
// prints the configuration with its defaults, or what is wrong with it, and
//
//	ovsplane-plugin-stripe --top [--daemon ADDR] [--job NAME] [--interval 1s] [--once]
//
// is a live terminal view of the running jobs, from the daemon's API (the samples `vsctl plugin
// stats stripe` shows): per job and peer the bytes sent and delivered, retransmits, adjusts,
// reorder depth and losses; per link usability, peer MACs, the measured rates, the EWMA loads,
// the balance degree, the policy's choices, drops and downs. It refreshes every interval
// until interrupted (--once: one frame, no screen clearing). Exit status: 0 done, 1 the daemon
// could not be asked, 2 a usage error or an invalid configuration.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/api/client"
	"github.com/ovsplane/ovsplane/internal/cli/cliconv"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/plugins/stripe/internal/stripeplugin"
)

// closeGrace bounds the stop of the jobs when the host is done with the plugin.
const closeGrace = 5 * time.Second

// maxConfigFile bounds a --check configuration file.
const maxConfigFile = stripeplugin.MaxConfigBytes

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
	p := stripeplugin.New(stripeplugin.Options{Logger: log})
	sdk.Serve(p)
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		log.Warn("stopping the stripe jobs", "err", err)
	}
}

// runCLI runs the command-line mode and returns the exit status.
func runCLI(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ovsplane-plugin-stripe", flag.ContinueOnError)
	// cliconv prints help and errors: the flag set prints nothing itself.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	version := fs.Bool("version", false, cliconv.VersionFlagUsage)
	check := fs.String("check", "", "check a stripe job's configuration, a file or inline JSON ({\"node\": 1, ...}), and print it with its defaults")
	topView := fs.Bool("top", false, "live view of the stripe jobs' stats, from the daemon")
	daemon := fs.String("daemon", defaultAddr(), "with --top: the daemon's API address (unix:PATH or tcp:HOST:PORT; $"+client.EnvAddr+")")
	job := fs.String("job", "", "with --top: show only this job")
	interval := fs.Duration("interval", time.Second, "with --top: the refresh interval")
	once := fs.Bool("once", false, "with --top: draw one frame and exit")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: ovsplane-plugin-stripe --check FILE|JSON")
		fmt.Fprintln(w, "       ovsplane-plugin-stripe --top [--daemon ADDR] [--job NAME] [--interval 1s] [--once]")
		fmt.Fprintln(w, "Without arguments the plugin serves ovsplaned, which starts it; `vsctl plugin stats stripe` shows its jobs' stats.")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if code, done := cliconv.Parsed("ovsplane-plugin-stripe", fs.Parse(args), stdout, stderr, usage); done {
		return code
	}
	if *version {
		cliconv.PrintVersion(stdout, "ovsplane-plugin-stripe")
		return 0
	}
	if fs.NArg() > 0 || (*check == "") == !*topView {
		usage(stderr)
		return 2
	}
	if *topView {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		o := topOptions{addr: *daemon, job: *job, interval: *interval, clear: !*once}
		if *once {
			o.frames = 1
		}
		if err := top(ctx, stdout, o); err != nil {
			fmt.Fprintln(stderr, "ovsplane-plugin-stripe --top:", err)
			return 1
		}
		return 0
	}
	data, err := readConfig(*check)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg, err := stripeplugin.ParseConfig(data)
	if err != nil {
		fmt.Fprintln(stderr, "invalid stripe job configuration:", err)
		return 2
	}
	fmt.Fprint(stdout, cfg.Describe())
	return 0
}

// defaultAddr is the daemon's API address: $OVSPLANE_API, else the default data dir's socket.
func defaultAddr() string {
	if a := os.Getenv(client.EnvAddr); a != "" {
		return a
	}
	return model.DefaultAPIAddr()
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
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, fmt.Errorf("--check %s: %w", arg, err)
	}
	if len(data) > maxConfigFile {
		return nil, fmt.Errorf("--check %s: more than %d bytes: a stripe job's configuration is a small JSON object", arg, maxConfigFile)
	}
	return data, nil
}
