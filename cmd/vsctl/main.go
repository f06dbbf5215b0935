// Command vsctl is a drop-in replacement for ovs-vsctl 3.1: the same command lines, output,
// errors and exit statuses, with much less work per invocation on big switches because it
// reads only the rows each command needs. See internal/cli/vsctl.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/ovsplane/ovsplane/internal/cli/vsctl"
)

func main() {
	// One invocation lives for milliseconds: collecting garbage only once the heap reaches
	// 64 MiB saves the collections a small heap would trigger during start-up, while big
	// listings (show on 20,000 ports) still run in bounded memory.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(64 << 20)
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
