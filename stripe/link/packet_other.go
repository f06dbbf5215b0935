//go:build !linux

package link

import (
	"context"
	"fmt"
)

// Open fails: packet sockets exist on Linux only.
func Open(ctx context.Context, cfg Config) (Link, error) {
	return nil, fmt.Errorf("link %s: AF_PACKET links need Linux", cfg.Interface)
}

func isDown(error) bool { return false }
