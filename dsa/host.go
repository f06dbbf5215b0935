package dsa

import (
	"errors"
	"log/slog"
	"time"
)

// Config is what a Host is built from. FS is required.
type Config struct {
	// FS is the machine's root filesystem (sysfs.New("/") on a host, a simidxd.Sim in tests).
	FS FS
	// Logger receives one line per change made (default: discard).
	Logger *slog.Logger
	// NodeTimeout bounds Apply's wait for /dev/dsa/wqX.Y after a work queue is bound (default
	// 2s; devtmpfs creates the node while the bind write runs, so the wait normally ends at once).
	NodeTimeout time.Duration
	// PollInterval is how often that wait re-checks (default 20ms).
	PollInterval time.Duration
}

// Host discovers, plans and changes one machine's DSA devices. It keeps no cache: every call
// reads the live state. Callers serialise Apply and Reset per machine; Discover and Plan only
// read and may run at any time.
type Host struct {
	fs      FS
	log     *slog.Logger
	nodeTO  time.Duration
	pollInt time.Duration
}

// New returns a Host over cfg.FS; it fails when FS is nil.
func New(cfg Config) (*Host, error) {
	if cfg.FS == nil {
		return nil, errors.New("dsa: Config.FS is required")
	}
	h := &Host{fs: cfg.FS, log: cfg.Logger, nodeTO: cfg.NodeTimeout, pollInt: cfg.PollInterval}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.nodeTO <= 0 {
		h.nodeTO = 2 * time.Second
	}
	if h.pollInt <= 0 {
		h.pollInt = 20 * time.Millisecond
	}
	return h, nil
}
