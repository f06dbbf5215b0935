// Command noopplugin is the trivial plugin the benchmarks measure the plugin system with: port
// type "noop", whose Attach does no host work and returns one port of the request's name with
// one interface of type internal (see package noop). It is built on plugins/sdk as an outside
// author's plugin would be; bench/plugin_test.go builds it into a temporary plugin dir, pins it
// by SHA-256 and runs it under plugins/host or ovsplaned.
package main

import (
	"log/slog"
	"os"

	"github.com/ovsplane/ovsplane/bench/internal/noopplugin/noop"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

func main() {
	// Standard output belongs to go-plugin's handshake: log to standard error only.
	sdk.Serve(noop.New(sdk.NewLogger(os.Stderr, slog.LevelWarn)))
}
