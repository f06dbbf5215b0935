//go:build linux

package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc/unixctltest"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestVswitchdCommandsKeepsTheLastSet: the plugins' AppctlCommands are the running
// ovs-vswitchd's; while it is stopped they stay those of the one last reached, with one
// warning however often they are asked; without a run directory (the embedded OVSDB) there
// are none.
func TestVswitchdCommandsKeepsTheLastSet(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	logs := &testkit.LogBuffer{}
	v := &vswitchdCommands{runDir: db.Dir, log: slog.New(slog.NewTextHandler(logs, nil))}
	ctx := t.Context()
	first := v.commands(ctx)
	if !slices.Contains(first, "list-commands") || !slices.Contains(first, "netdev-dummy/receive") {
		t.Fatalf("commands of the running ovs-vswitchd: %q", first)
	}
	sw.Stop(t)
	for range 3 {
		if got := v.commands(ctx); !slices.Equal(got, first) {
			t.Fatalf("commands while ovs-vswitchd is stopped: %d, want the last %d", len(got), len(first))
		}
	}
	if n := strings.Count(logs.String(), "cannot read ovs-vswitchd's unixctl commands"); n != 1 {
		t.Errorf("%d warnings for 3 failed reads, want 1:\n%s", n, logs)
	}
	if got := (&vswitchdCommands{log: slog.New(slog.DiscardHandler)}).commands(ctx); got != nil {
		t.Errorf("commands without a run directory: %q", got)
	}
}

// TestVswitchdCommandsConfiguredSocket: with ovsdb.vswitchd_unixctl set (an ovs-vswitchd
// started with --unixctl=PATH, as on a ZStack host) the commands come from that socket, which
// the run directory's discovery does not find.
func TestVswitchdCommandsConfiguredSocket(t *testing.T) {
	srv := unixctltest.Start(t, unixctltest.Options{})
	zs := filepath.Join(srv.RunDir, "ovs-vswitchd.zs.ctl")
	if err := os.Rename(srv.Path, zs); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	if got := (&vswitchdCommands{runDir: srv.RunDir, log: quiet}).commands(t.Context()); got != nil {
		t.Fatalf("discovery found commands without the configured socket: %d", len(got))
	}
	got := (&vswitchdCommands{runDir: srv.RunDir, ctl: zs, log: quiet}).commands(t.Context())
	if !slices.Contains(got, "list-commands") || !slices.Contains(got, "dpif-netdev/pmd-rxq-show") {
		t.Errorf("commands through %s: %q", zs, got)
	}
}
