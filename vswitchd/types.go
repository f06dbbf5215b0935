package vswitchd

import "github.com/ovsplane/ovsplane/model"

// Aliases kept while the daemon split lands (issue 13); remove once vswitchd speaks model.
// The definitions, with their contracts, are in package model.
type (
	Origin     = model.Origin
	BridgeInfo = model.BridgeInfo
	PortInfo   = model.PortInfo
	Mode       = model.Mode
	Health     = model.Health
	PluginInfo = model.PluginInfo
)

// Aliases kept while the daemon split lands (issue 13); remove once vswitchd speaks model.
const (
	OriginConfig = model.OriginConfig
	OriginAPI    = model.OriginAPI
	ModeOVS      = model.ModeOVS
	ModeSandbox  = model.ModeSandbox
	ModeEmbedded = model.ModeEmbedded
	Version      = model.Version
)

// Aliases kept while the daemon split lands (issue 13); remove once vswitchd speaks model.
var (
	ErrInvalid     = model.ErrInvalid
	ErrNotFound    = model.ErrNotFound
	ErrConflict    = model.ErrConflict
	ErrUnavailable = model.ErrUnavailable
	ErrFailed      = model.ErrFailed
)
