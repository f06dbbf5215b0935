//go:build linux

package wg

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun"
)

// Device is a running WireGuard interface: a tun device whose packets WireGuard's Go
// implementation encrypts and sends over UDP, in this process. It stops when the context given
// to Open ends or Close is called; the tun interface disappears with it.
type Device struct {
	name   string
	pub    Key
	dev    *device.Device
	cancel context.CancelFunc
	done   chan struct{}
}

// Open validates cfg, creates the tun interface, applies the keys and peers, brings the device
// up (WireGuard binds its UDP port), gives the tun its address and sets it up. Everything that
// creates a kernel object runs through cfg.RunIn. On error nothing is left behind.
func Open(ctx context.Context, cfg Config) (*Device, error) {
	mtu, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("wg: open %s: %w", cfg.Name, err)
	}
	pub, err := cfg.PrivateKey.PublicKey()
	if err != nil {
		return nil, err
	}
	runIn := cfg.RunIn
	if runIn == nil {
		runIn = func(fn func() error) error { return fn() }
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("wg", cfg.Name)
	var td tun.Device
	if err := runIn(func() (err error) {
		td, err = tun.CreateTUN(cfg.Name, mtu)
		return err
	}); err != nil {
		return nil, fmt.Errorf("wg: create tun %s: %w", cfg.Name, err)
	}
	wlog := &device.Logger{
		Verbosef: func(format string, args ...any) { logger.Debug(fmt.Sprintf(format, args...)) },
		Errorf:   func(format string, args ...any) { logger.Error(fmt.Sprintf(format, args...)) },
	}
	// WireGuard opens its sockets on Up and on port changes, possibly from its own goroutines:
	// the bind enters the namespace itself.
	dev := device.NewDevice(td, &nsBind{Bind: conn.NewDefaultBind(), runIn: runIn}, wlog)
	fail := func(err error) (*Device, error) {
		dev.Close()
		return nil, err
	}
	if err := dev.IpcSet(cfg.uapi()); err != nil {
		return fail(fmt.Errorf("wg: configure %s: %w", cfg.Name, err))
	}
	if err := dev.Up(); err != nil {
		return fail(fmt.Errorf("wg: %s up: %w", cfg.Name, err))
	}
	if err := runIn(func() error { return setUp(cfg.Name, cfg.Address) }); err != nil {
		return fail(fmt.Errorf("wg: %s: %w", cfg.Name, err))
	}
	ctx, cancel := context.WithCancel(ctx)
	d := &Device{name: cfg.Name, pub: pub, dev: dev, cancel: cancel, done: make(chan struct{})}
	go func() {
		<-ctx.Done()
		dev.Close()
		close(d.done)
	}()
	return d, nil
}

// setUp gives interface name the address (when valid) and sets it up, in the calling thread's
// namespace.
func setUp(name string, addr netip.Prefix) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find interface: %w", err)
	}
	if addr.IsValid() {
		a := &netlink.Addr{IPNet: &net.IPNet{IP: addr.Addr().AsSlice(), Mask: net.CIDRMask(addr.Bits(), addr.Addr().BitLen())}}
		if addr.Addr().Is6() {
			a.Flags = unix.IFA_F_NODAD
		}
		if err := netlink.AddrAdd(link, a); err != nil {
			return fmt.Errorf("add address %v: %w", addr, err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	return nil
}

// nsBind is a conn.Bind whose Open runs in the device's namespace.
type nsBind struct {
	conn.Bind
	runIn func(fn func() error) error
}

// Open opens the wrapped bind's sockets through runIn.
func (b *nsBind) Open(port uint16) (fns []conn.ReceiveFunc, actual uint16, err error) {
	err = b.runIn(func() (err error) {
		fns, actual, err = b.Bind.Open(port)
		return err
	})
	return fns, actual, err
}

// Name returns the tun interface's name.
func (d *Device) Name() string { return d.name }

// PublicKey returns this device's public key, the one its peers configure.
func (d *Device) PublicKey() Key { return d.pub }

// Close stops the device and removes its tun interface. Closing twice is harmless.
func (d *Device) Close() error {
	d.cancel()
	<-d.done
	return nil
}

// Done is closed once the device has stopped.
func (d *Device) Done() <-chan struct{} { return d.done }

// ListenPort returns the UDP port WireGuard listens on (the chosen one when Config.ListenPort
// was 0).
func (d *Device) ListenPort() (uint16, error) {
	port, _, err := d.state()
	return port, err
}

// Stats returns every peer's state, in no particular order.
func (d *Device) Stats() ([]PeerStats, error) {
	_, peers, err := d.state()
	return peers, err
}

// state reads WireGuard's configuration-protocol dump.
func (d *Device) state() (uint16, []PeerStats, error) {
	select {
	case <-d.done:
		return 0, nil, fmt.Errorf("wg: %s: device closed", d.name)
	default:
	}
	text, err := d.dev.IpcGet()
	if err != nil {
		return 0, nil, fmt.Errorf("wg: %s: read state: %w", d.name, err)
	}
	port, peers, err := parseState(text)
	if err != nil {
		return 0, nil, fmt.Errorf("wg: %s: %w", d.name, err)
	}
	return port, peers, nil
}
