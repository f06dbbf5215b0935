// Package model is ovsplane's domain vocabulary: the objects the daemon manages (Bridge, Port,
// Interface), their status (Status, State, Kind), what the daemon reports about them and about
// itself (BridgeInfo, PortInfo, Health, PluginInfo, Origin, Mode, Version), the error kinds
// every layer answers with (ErrInvalid, ErrNotFound, ErrConflict, ErrUnavailable, ErrFailed),
// the plugin allow-list entry (Plugin), TLS file names and the API socket's default address.
//
// The configuration loader (vswitchd/config), the daemon (vswitchd), its API server and
// client (vswitchd/apiserver, api/client), the wire converters (api/convert), the plugin host
// (plugins/host) and the command-line tools all speak these types, so none of them needs to
// import another for a type.
//
// # Rule
//
// model is a leaf: it imports only the standard library and its own sub-package model/limits
// (the documented bounds). It holds values and pure functions on them (canonical forms, path
// resolution), never I/O, locks or goroutines, and no package-level state beyond constants,
// error sentinels and the lists of accepted values (InterfaceTypes, VLANModes, LACPModes). Anything that needs YAML, viper, OVSDB, gRPC or
// the plugin contract lives above it.
package model
