package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// Default addresses of the endpoint's sockets.
const (
	DefaultTCPAddr = "127.0.0.1:7475"
	DefaultUDPAddr = "127.0.0.1:7475"
	// MaxSocketPath bounds a unix socket path (the kernel's sun_path less its NUL).
	MaxSocketPath = 107
)

// loopbackOnly refuses an address whose host is not a loopback IP unless remote is set.
func loopbackOnly(network, addr string, remote bool) error {
	if remote {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("endpoint: %s address %q: %w", network, addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("endpoint: %s address %q is not a loopback IP: applications of other hosts would reach the stripe; use 127.0.0.1 or ::1, or allow remote clients explicitly", network, addr)
	}
	return nil
}

// ListenTCP listens on addr ("" for DefaultTCPAddr), which must be a loopback IP unless
// remote is set.
func ListenTCP(ctx context.Context, addr string, remote bool) (net.Listener, error) {
	if addr == "" {
		addr = DefaultTCPAddr
	}
	if err := loopbackOnly("tcp", addr, remote); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("endpoint: listen on tcp %s: %w", addr, err)
	}
	return ln, nil
}

// ListenUDP listens on addr ("" for DefaultUDPAddr), which must be a loopback IP unless
// remote is set.
func ListenUDP(ctx context.Context, addr string, remote bool) (net.PacketConn, error) {
	if addr == "" {
		addr = DefaultUDPAddr
	}
	if err := loopbackOnly("udp", addr, remote); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(ctx, "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("endpoint: listen on udp %s: %w", addr, err)
	}
	return pc, nil
}

// ListenUnix listens on the unix socket path. A socket file left by a process that died is
// removed first (nothing answers on it); one that answers is in use and refused, as is any
// file that is not a socket.
func ListenUnix(ctx context.Context, path string) (net.Listener, error) {
	if path == "" || len(path) > MaxSocketPath {
		return nil, fmt.Errorf("endpoint: unix socket path of %d bytes: want 1 to %d", len(path), MaxSocketPath)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err == nil {
		return ln, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("endpoint: listen on unix %s: %w", path, err)
	}
	fi, serr := os.Lstat(path)
	if serr != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("endpoint: listen on unix %s: the path exists and is not a socket: remove it or pick another path: %w", path, err)
	}
	d := net.Dialer{Timeout: time.Second}
	if c, derr := d.DialContext(ctx, "unix", path); derr == nil {
		_ = c.Close()
		return nil, fmt.Errorf("endpoint: unix socket %s is in use by another endpoint: stop it or pick another path: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("endpoint: remove the stale socket %s: %w", path, err)
	}
	ln, err = lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("endpoint: listen on unix %s: %w", path, err)
	}
	return ln, nil
}
