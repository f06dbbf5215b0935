// Command vsctl is a drop-in replacement for ovs-vsctl 3.1: the same command lines, output,
// errors and exit statuses, with much less work per invocation on big switches because it
// reads only the rows each command needs. See internal/cli/vsctl.
//
// Four commands ovs-vsctl does not have talk to the ovsplaned daemon instead of OVSDB:
// `vsctl status [OBJECT...]`, `vsctl apply -f FILE`, `vsctl plugin list|status [NAME]` and
// `vsctl overlay nodes|links|routes|versions|lookup` (see internal/cli/daemoncmd). A command
// line whose first non-option argument is one of them goes there. So does `vsctl add-port BR
// P -- set Interface P type=T ...` when T is not an Open vSwitch interface type (a plugin's
// port, added by the daemon; daemoncmd.RoutePort), or is refused when no daemon is found;
// every other line is ovs-vsctl's. --daemon=ADDR, which
// ovs-vsctl does not have, is accepted among the global options of every line and names the
// daemon. `vsctl --help` prints ovs-vsctl's help, then theirs.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
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
	// --daemon=ADDR is accepted on every line; ovs-vsctl's implementation never sees it.
	daemon, args, err := daemoncmd.CutDaemon(os.Args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (use --help for help)\n", filepath.Base(os.Args[0]), err)
		stop()
		os.Exit(1)
	}
	ovs := vsctl.Env{Args: args, Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr}
	route := daemoncmd.Env{Args: args, Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr, Daemon: daemon,
		IfaceTypes: func(ctx context.Context) ([]string, error) { return vsctl.IfaceTypes(ctx, ovs) }}
	if code, ok := daemoncmd.RoutePort(ctx, route); ok {
		stop()
		os.Exit(code)
	}
	code := vsctl.Main(ctx, vsctl.Env{
		Args:     args,
		Getenv:   os.Getenv,
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		Alarm:    vsctl.KillWithAlarm,
		MoreHelp: daemoncmd.Usage,
	})
	stop()
	os.Exit(code)
}
