package vsctl

import "github.com/ovsplane/ovsplane/internal/cli"

// Placeholders until dbcmds.go lands (delete this file then).
func registerDBCommands(map[string]Handler) {}

func renderTable(t *cli.OutputTable, opts *cli.Options) string { return "" }
