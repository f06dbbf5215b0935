package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

func logStatus(log *slog.Logger, s model.Status) {
	attrs := []any{"object", s.Key(), "state", string(s.State)}
	if s.Bridge != "" && s.Kind != model.KindBridge {
		attrs = append(attrs, "bridge", s.Bridge)
	}
	if s.Ofport != 0 {
		attrs = append(attrs, "ofport", s.Ofport)
	}
	if s.Error != "" {
		attrs = append(attrs, "error", s.Error)
	}
	if s.State == "" {
		attrs[3] = "removed"
	}
	log.Info("status", attrs...)
}

func printWelcome(w io.Writer, tgt *target, file string, cfg *config.Config) {
	fmt.Fprintf(w, "ovsplaned: %s; keeping it converged to %s\n", tgt.describe, orDefault(file, "the default configuration"))
	fmt.Fprintf(w, "  try:  vsctl --db=%s show\n", tgt.endpoints[0])
	for _, l := range cfg.API.Listen {
		if path, ok := strings.CutPrefix(l, "unix:"); ok {
			fmt.Fprintf(w, "        vsctl --daemon=%s status\n", l)
			fmt.Fprintf(w, "        curl -s --unix-socket %s -H 'Content-Type: application/json' -d '{}' http://ovsplaned/ovsplane.v1.SwitchService/ListStatus\n", path)
			break
		}
	}
	if cfg.Metrics.Address != "" {
		fmt.Fprintf(w, "        curl -s http://%s/metrics | grep ^ovsplane_\n", cfg.Metrics.Address)
	}
	fmt.Fprintln(w, "  Ctrl-C stops it.")
}

// once converges and prints the statuses, failing unless every object becomes ready in time.
func once(ctx context.Context, d *vswitchd.Daemon, timeout time.Duration, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var st []model.Status
	for {
		watch := d.Watch()
		err := d.Reconcile(ctx)
		st = d.Status()
		if err == nil && allReady(st) {
			break
		}
		select {
		case <-ctx.Done():
			printStatus(stdout, st)
			if err != nil {
				return fmt.Errorf("%w: %w", errNotReady, err)
			}
			return errNotReady
		case <-watch:
		case <-time.After(200 * time.Millisecond):
		}
	}
	printStatus(stdout, st)
	return nil
}

func allReady(st []model.Status) bool {
	for _, s := range st {
		if s.State != model.StateReady {
			return false
		}
	}
	return true
}

func printStatus(w io.Writer, st []model.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tSTATE\tOFPORT\tERROR")
	for _, s := range st {
		of := ""
		if s.Ofport != 0 {
			of = fmt.Sprint(s.Ofport)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Key(), s.State, of, s.Error)
	}
	tw.Flush()
}
