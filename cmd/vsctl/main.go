// Command vsctl is a drop-in replacement for ovs-vsctl 3.1: the same command lines, output,
// errors and exit statuses, with much less work per invocation on big switches because it
// reads only the rows each command needs. See internal/cli/vsctl.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ovsplane/ovsplane/internal/cli/vsctl"
)

func main() {
	// ovs-vsctl ignores SIGPIPE and reports write errors instead.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := vsctl.Main(ctx, vsctl.Env{
		Args:   os.Args,
		Getenv: os.Getenv,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Alarm:  vsctl.KillWithAlarm,
	})
	stop()
	os.Exit(code)
}
