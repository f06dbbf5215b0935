//go:build !linux

package tunnel

import (
	"context"
	"errors"
	"fmt"
)

// Tunnel is one tun device carried by an engine; only Linux has them.
type Tunnel struct{ cfg Config }

// Open fails: tun devices are Linux only.
func Open(ctx context.Context, cfg Config) (*Tunnel, error) {
	return nil, fmt.Errorf("tunnel %s: %w", cfg.Name, errors.ErrUnsupported)
}

// Name is the device's name.
func (t *Tunnel) Name() string { return t.cfg.Name }

// MTU is the device's MTU.
func (t *Tunnel) MTU() int { return t.cfg.MTU }

// Run fails: tun devices are Linux only.
func (t *Tunnel) Run(ctx context.Context) error { return errors.ErrUnsupported }

// Stats returns zero counters.
func (t *Tunnel) Stats() Stats { return Stats{} }

// Close does nothing.
func (t *Tunnel) Close() error { return nil }
