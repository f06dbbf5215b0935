package main

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// vswitchdCommands reads the unixctl command set of the running ovs-vswitchd (`ovs-appctl
// list-commands`) for the plugins' host facts, through ovsproc's unixctl client, on the
// socket VswitchdCtl finds in Open vSwitch's run directory.
type vswitchdCommands struct {
	runDir string // "" (the embedded OVSDB): no ovs-vswitchd, no commands
	ctl    string // ovs-vswitchd's unixctl socket when configured (ovsdb.vswitchd_unixctl), else found in runDir
	log    *slog.Logger

	mu      sync.Mutex
	last    []string // of the ovs-vswitchd last reached
	lastErr string   // the last failure, logged once
}

// commands returns the command names of the running ovs-vswitchd, or, when it cannot be
// reached (restarting, or behind a remote OVSDB endpoint), those of the one last reached (none
// before the first): a switch that is briefly away has not lost its commands. A failure is
// logged once until the next success.
func (v *vswitchdCommands) commands(ctx context.Context) []string {
	if v.runDir == "" {
		return nil
	}
	cmds, err := v.read(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != v.lastErr {
			v.lastErr = msg
			v.log.Warn("plugins' facts: cannot read ovs-vswitchd's unixctl commands; they get the last known set", "commands", len(v.last), "error", err)
		}
		return slices.Clone(v.last)
	}
	v.last, v.lastErr = cmds, ""
	return slices.Clone(cmds)
}

func (v *vswitchdCommands) read(ctx context.Context) ([]string, error) {
	ctl := v.ctl
	if ctl == "" {
		var err error
		if ctl, err = ovsproc.VswitchdCtl(v.runDir); err != nil {
			return nil, err
		}
	}
	return ovsproc.AppctlCommands(ctx, ctl)
}
