package vsctl

// Placeholder until vswitch.go lands (delete this file then).
func registerVSwitchCommands(map[string]Handler) {}
