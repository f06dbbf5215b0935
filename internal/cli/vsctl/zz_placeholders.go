package vsctl

import "github.com/ovsplane/ovsplane/internal/cli"

// Placeholders until the command files land (replaced by dbcmds.go and vswitch.go).
func registerDBCommands(map[string]Handler)      {}
func registerVSwitchCommands(map[string]Handler) {}

func renderTable(t *cli.OutputTable, opts *cli.Options) string { return "" }
