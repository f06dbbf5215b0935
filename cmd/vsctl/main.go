// Command vsctl is a drop-in replacement for ovs-vsctl 3.1: the same command lines, output,
// errors and exit statuses, with much less work per invocation on big switches because it
// reads only the rows each command needs. See internal/cli/vsctl.
//
// Three commands ovs-vsctl does not have talk to the ovsplaned daemon instead of OVSDB:
// `vsctl status [OBJECT...]`, `vsctl apply -f FILE` and `vsctl plugin list|status [NAME]` (see
// internal/cli/daemoncmd). A command line whose first non-option argument is one of them goes
// there. So does `vsctl add-port BR P -- set Interface P type=T ...` when T is not an Open
// vSwitch interface type (a plugin's port, added by the daemon; daemoncmd.RoutePort); every
// other line is ovs-vsctl's. `vsctl --help` prints ovs-vsctl's help, then theirs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/internal/cli/vsctl"
)

func main() {
	// ovs-vsctl ignores SIGPIPE and reports write errors instead.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if daemoncmd.Handles(os.Args) {
		code := daemoncmd.Main(ctx, daemoncmd.Env{
			Args:           os.Args,
			Getenv:         os.Getenv,
			Stdout:         os.Stdout,
			Stderr:         os.Stderr,
			StderrTerminal: daemoncmd.IsTerminal(os.Stderr),
		})
		stop()
		os.Exit(code)
	}
	if code, ok := daemoncmd.RoutePort(ctx, daemoncmd.Env{Args: os.Args, Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr}); ok {
		stop()
		os.Exit(code)
	}
	code := vsctl.Main(ctx, vsctl.Env{
		Args:     os.Args,
		Getenv:   os.Getenv,
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		Alarm:    vsctl.KillWithAlarm,
		MoreHelp: daemoncmd.Usage,
	})
	stop()
	os.Exit(code)
}
