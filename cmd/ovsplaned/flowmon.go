package main

import (
	"log/slog"
	"path/filepath"

	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/flowmonapi"
)

// flowmonPlugin is the flowmon plugin's name: its data dir, <data_dir>/plugin-data/flowmon,
// holds its collector jobs' query sockets.
const flowmonPlugin = "flowmon"

// flowmonView is the API's read-only flowmon view (vswitchd/flowmonapi): it forwards queries
// to the flowmon-collector jobs' query sockets in the flowmon plugin's data dir. Without a
// collector job its endpoints say so.
func flowmonView(cfg *config.Config, log *slog.Logger) *flowmonapi.Handler {
	return flowmonapi.New(flowmonapi.Options{SocketDir: filepath.Join(cfg.DataDir, "plugin-data", flowmonPlugin), Logger: log})
}
