// Command ovsplaned is the ovsplane daemon. In this foundation release it demonstrates the OVSDB
// layer end to end: it connects to OVSDB (the local Open vSwitch when one is running, otherwise
// an embedded in-memory OVSDB with a simulated ovs-vswitchd), builds a small demo bridge in one
// atomic transaction, waits for ovs-vswitchd to apply it, reports what ovs-vswitchd said about each
// interface, and removes what it created. The declarative daemon replaces this demo in a later
// release.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
)

func main() {
	// libovsdb's RPC layer prints connection-teardown noise through the standard logger; the
	// client's own events go through slog.
	stdlog.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ovsplaned: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	db       string
	keep     bool
	embedded bool
	timeout  time.Duration
	logLevel string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("ovsplaned", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.db, "db", "", "OVSDB endpoint (unix:PATH, tcp:HOST:PORT); default: the local Open vSwitch if its socket exists, else an embedded OVSDB")
	fs.BoolVar(&o.embedded, "embedded", false, "always use the embedded in-memory OVSDB with a simulated ovs-vswitchd")
	fs.BoolVar(&o.keep, "keep", false, "keep the demo bridge and stay running until interrupted (to look at it with ovs-vsctl)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for ovs-vswitchd to apply the change")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("-log-level %q: use debug, info, warn or error", o.logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	endpoint, cleanup, err := chooseOVSDB(ctx, o, log, stdout)
	if err != nil {
		return err
	}
	defer cleanup()
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c, err := ovsdb.Dial(dialCtx, ovsdb.Config{Endpoints: []string{endpoint}, Owner: "ovsplaned-demo", Logger: log})
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()
	return demo(ctx, c, o, endpoint, stdout)
}

// chooseOVSDB returns the endpoint to use and, for the embedded mode, starts it.
func chooseOVSDB(ctx context.Context, o options, log *slog.Logger, stdout io.Writer) (string, func(), error) {
	if o.db != "" {
		return o.db, func() {}, nil
	}
	if !o.embedded {
		if sock := defaultSocket(); sock != "" {
			fmt.Fprintf(stdout, "Using the local Open vSwitch at unix:%s\n", sock)
			return "unix:" + sock, func() {}, nil
		}
	}
	srv, err := ovsdbtest.New(ctx, ovsdbtest.Config{Logger: log})
	if err != nil {
		return "", nil, fmt.Errorf("starting the embedded OVSDB: %w", err)
	}
	sim, err := ovsdbtest.NewVswitchd(ctx, ovsdbtest.VswitchdConfig{Endpoint: srv.Endpoint(), Logger: log})
	if err != nil {
		_ = srv.Close()
		return "", nil, fmt.Errorf("starting the simulated ovs-vswitchd: %w", err)
	}
	fmt.Fprintf(stdout, "No Open vSwitch running here: using an embedded in-memory OVSDB at %s\n"+
		"with a simulated ovs-vswitchd. It assigns ofports and reports errors like the real one,\n"+
		"but NO PACKETS FLOW in this mode.\n", srv.Endpoint())
	return srv.Endpoint(), func() { sim.Close(); _ = srv.Close() }, nil
}

// defaultSocket returns the local Open vSwitch database socket when it exists.
func defaultSocket() string {
	dirs := []string{"/var/run/openvswitch", "/run/openvswitch"}
	if d := os.Getenv("OVS_RUNDIR"); d != "" {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		p := filepath.Join(d, "db.sock")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return p
		}
	}
	return ""
}

const demoBridge = "ovsplane-demo"

func demo(ctx context.Context, c *ovsdb.Client, o options, endpoint string, out io.Writer) error {
	if err := c.Init(ctx); err != nil {
		return err
	}
	tx := c.NewTxn(1).
		EnsureBridge(ovsdb.BridgeSpec{Name: demoBridge, DatapathType: "netdev", ExternalIDs: map[string]string{"purpose": "demo"}}).
		EnsurePort(ovsdb.PortSpec{Bridge: demoBridge, Name: "demo-int0", Tag: ptr(10),
			Interfaces: []ovsdb.InterfaceSpec{{Name: "demo-int0", Type: "internal", MTURequest: ptr(1400)}}}).
		EnsurePort(ovsdb.PortSpec{Bridge: demoBridge, Name: "demo-vhost0", Interfaces: []ovsdb.InterfaceSpec{{
			Name: "demo-vhost0", Type: "dpdkvhostuserclient", OfportRequest: ptr(100),
			Options: map[string]string{"vhost-server-path": "/tmp/ovsplane-demo-vhost0.sock"}}}}).
		EnsurePort(ovsdb.PortSpec{Bridge: demoBridge, Name: "demo-broken0", Interfaces: []ovsdb.InterfaceSpec{{
			Name: "demo-broken0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "no-such-device"}}}})
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	start := time.Now()
	res, err := tx.Commit(wctx, ovsdb.CommitOptions{})
	cancel()
	var ae *ovsdb.ApplyError
	if err != nil && !errors.As(err, &ae) {
		return fmt.Errorf("building the demo bridge: %w", err)
	}
	fmt.Fprintf(out, "\nBuilt bridge %s with 3 ports in one transaction of %d operations; ovs-vswitchd applied it\n"+
		"as configuration %d in %s. What ovs-vswitchd reports:\n\n", demoBridge, res.Ops, res.NextCfg, time.Since(start).Round(time.Millisecond))
	printInterfaces(out, res.Interfaces)
	if ae != nil {
		fmt.Fprintf(out, "\nAs intended, one port was refused (the error names it and carries ovs-vswitchd's message):\n  %v\n", ae)
	}
	fmt.Fprintf(out, "\nRows owned by %q (tagged %s / %s in external_ids):\n", c.Owner(), ovsdb.OwnerKey, ovsdb.GenerationKey)
	for _, r := range c.Owned() {
		fmt.Fprintf(out, "  %-9s %-14s generation %d\n", r.Table, r.Name, r.Generation)
	}
	if o.keep {
		fmt.Fprintf(out, "\nKeeping it. Try:  ovs-vsctl --db=%s show\nPress Ctrl-C to remove the demo bridge and exit.\n", endpoint)
		<-ctx.Done()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.timeout)
	defer cancel()
	if _, err := c.NewTxn(1).DeleteBridge(demoBridge).Commit(cctx, ovsdb.CommitOptions{}); err != nil {
		return fmt.Errorf("removing the demo bridge: %w", err)
	}
	fmt.Fprintf(out, "\nRemoved bridge %s and its ports; nothing else was touched.\n", demoBridge)
	fmt.Fprintln(out, "Next: `make test` runs the unit and integration tests (real OVS-DPDK when run as root).")
	return nil
}

func printInterfaces(out io.Writer, states []ovsdb.InterfaceState) {
	states = slices.Clone(states)
	slices.SortFunc(states, func(a, b ovsdb.InterfaceState) int { return strings.Compare(a.Name, b.Name) })
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  INTERFACE\tTYPE\tOFPORT\tLINK\tMTU\tERROR")
	for _, s := range states {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%d\t%s\n", s.Name, s.Type, s.Ofport, s.LinkState, s.MTU, s.Error)
	}
	_ = tw.Flush()
}

func ptr[T any](v T) *T { return &v }
