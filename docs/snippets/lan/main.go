// Command ovsplane-lan is the plugin of docs/plugins.md's walk-through.
package main

import (
	"log/slog"
	"os"

	"github.com/ovsplane/ovsplane/plugins/sdk"
)

func main() {
	log := sdk.NewLogger(os.Stderr, slog.LevelInfo)
	sdk.Serve(&lan{log: log})
}
