package model

import "path/filepath"

// DefaultDataDir is the daemon's data directory when the configuration sets none.
const DefaultDataDir = "/var/lib/ovsplane"

// SocketName is the file name of the default API socket inside the data dir.
const SocketName = "ovsplaned.sock"

// APIAddr returns the default API address of a daemon whose data dir is dataDir:
// "unix:<dataDir>/ovsplaned.sock". It is where the daemon listens when the configuration
// names no api.listen address.
func APIAddr(dataDir string) string {
	return "unix:" + filepath.Join(dataDir, SocketName)
}

// DefaultAPIAddr returns the API address of a daemon with the default data dir,
// "unix:/var/lib/ovsplane/ovsplaned.sock": the address clients dial when told no other.
func DefaultAPIAddr() string { return APIAddr(DefaultDataDir) }
