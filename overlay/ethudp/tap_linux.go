//go:build linux

package ethudp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Tap device bounds.
const (
	// DefaultTapMTU is the tap's MTU when TapConfig.MTU is 0.
	DefaultTapMTU = 1500
	// MinTapMTU is IPv4's minimum MTU; MaxTapMTU is the largest MTU whose frames (with an
	// 802.1Q tag) still fit MaxFrameSize.
	MinTapMTU, MaxTapMTU = 68, MaxFrameSize - 18
	// maxIfName is the kernel's interface name limit (IFNAMSIZ - 1).
	maxIfName = 15
)

// TapConfig describes the tap device AttachTap creates.
type TapConfig struct {
	// Name is the tap's interface name (1–15 characters of A-Z a-z 0-9 . _ -). The caller then
	// adds it to the site's OVS bridge (a "system" port of a datapath_type=netdev bridge).
	Name string
	// MTU is the tap's MTU (0: DefaultTapMTU; MinTapMTU–MaxTapMTU). Frames leave as one UDP
	// datagram each (unless Options.MTU fragments them), so MTU + 14 + 28 should fit the
	// underlay's MTU.
	MTU int
	// RunIn runs fn on a thread in the network namespace the tap belongs to (where the site's
	// ovs-vswitchd runs); nil runs fn directly. Tests pass test/lab's Netns.Do.
	RunIn func(fn func() error) error
}

// TapCounters is a snapshot of a TapPort's counters; the Link counts the tunnel side.
type TapCounters struct {
	// FromTap counts frames read from the tap (sent by the bridge) and handed to Link.Send;
	// SendRefused counts those the Link refused (its Counters say why).
	FromTap, SendRefused uint64
	// ToTap counts frames received from the peer and written to the tap; WriteErrors counts
	// writes the tap refused.
	ToTap, WriteErrors uint64
	// Oversize counts frames read from the tap that exceed MaxFrameSize (dropped).
	Oversize uint64
	// ReadErrors counts failed reads from the tap; after each the port waits (10 ms,
	// doubling to 1 s, back to 10 ms after a good read) instead of retrying at once.
	ReadErrors uint64
}

// TapPort joins a Link to a tap device: every Ethernet frame the kernel transmits on the tap
// (for example OVS forwarding out of that port) is sent to the peer, and every frame received
// from the peer is injected into the tap (OVS receives it on that port). It stops when the
// context given to AttachTap ends, when Close is called, or when the Link stops; the tap
// interface disappears with it.
type TapPort struct {
	name   string
	file   *os.File
	cancel context.CancelFunc
	done   chan struct{}

	fromTap, sendRefused, toTap, writeErrors, oversize, readErrors atomic.Uint64
}

// AttachTap creates tap device cfg.Name (through cfg.RunIn), sets its MTU and brings it up, then
// pumps frames between it and link until ctx ends, Close is called or the link stops. The link
// keeps running after the port stops; its owner closes it. When the link uses one of EthUDP's
// ciphers, AttachTap logs a warning on the link's Logger: they are weak and kept for
// interoperability only.
func AttachTap(ctx context.Context, link *Link, cfg TapConfig) (*TapPort, error) {
	if link == nil {
		return nil, errors.New("ethudp: attach tap: link is nil: Open a Link first")
	}
	if err := checkIfName(cfg.Name); err != nil {
		return nil, err
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = DefaultTapMTU
	}
	if mtu < MinTapMTU || mtu > MaxTapMTU {
		return nil, fmt.Errorf("ethudp: tap %s: MTU %d: use 0 (default %d) or %d-%d", cfg.Name, cfg.MTU, DefaultTapMTU, MinTapMTU, MaxTapMTU)
	}
	runIn := cfg.RunIn
	if runIn == nil {
		runIn = func(fn func() error) error { return fn() }
	}
	var f *os.File
	if err := runIn(func() (err error) {
		f, err = createTap(cfg.Name, mtu)
		return err
	}); err != nil {
		return nil, fmt.Errorf("ethudp: tap %s: %w", cfg.Name, err)
	}
	if c := link.codec.Options().Cipher; c != CipherNone {
		link.log.Warn("ethudp: tap port carries frames under EthUDP's "+c.String()+
			" cipher, which is weak (no integrity; AES-CBC with a fixed zero IV): interoperability only, use WireGuard for new links",
			"tap", cfg.Name)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &TapPort{name: cfg.Name, file: f, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.tapToLink(ctx, link) }()
	go func() { defer wg.Done(); p.linkToTap(ctx, link) }()
	go func() {
		select {
		case <-ctx.Done():
		case <-link.Done():
		}
		cancel()
		_ = f.Close() // unblocks the tap read
		wg.Wait()
		close(p.done)
	}()
	return p, nil
}

// createTap opens /dev/net/tun as a tap without packet information (frames only), in the
// calling thread's namespace, sets its MTU and brings it up. The device is not persistent: it
// goes away when the returned file is closed.
func createTap(name string, mtu int) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("interface name: %w", err)
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("create tap (TUNSETIFF): %w", err)
	}
	f := os.NewFile(uintptr(fd), "/dev/net/tun:"+name) // non-blocking: reads go through the poller
	link, err := netlink.LinkByName(name)
	if err == nil {
		err = netlink.LinkSetMTU(link, mtu)
	}
	if err == nil {
		err = netlink.LinkSetUp(link)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("set MTU %d and up: %w", mtu, err)
	}
	return f, nil
}

// checkIfName validates an interface name.
func checkIfName(name string) error {
	if name == "" || len(name) > maxIfName {
		return fmt.Errorf("ethudp: tap name %q: give 1-%d characters", name, maxIfName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("ethudp: tap name %q: use only A-Z a-z 0-9 . _ -", name)
		}
	}
	return nil
}

// tapToLink sends every frame read from the tap through the link.
func (p *TapPort) tapToLink(ctx context.Context, link *Link) {
	buf := make([]byte, MaxFrameSize+1)
	var back readBackoff
	for {
		n, err := p.file.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return
			}
			// A read error (the tap went down): keep serving, but wait first so that a
			// persistent error does not spin a CPU.
			p.readErrors.Add(1)
			if !back.wait(ctx) {
				return
			}
			continue
		}
		back.reset()
		if n > MaxFrameSize {
			p.oversize.Add(1)
			continue
		}
		p.fromTap.Add(1)
		if err := link.Send(ctx, buf[:n]); err != nil {
			p.sendRefused.Add(1) // counted by reason in the Link
		}
	}
}

// Read error backoff: the first wait after an error, and the cap of the doubling.
const (
	readBackoffFirst = 10 * time.Millisecond
	readBackoffMax   = time.Second
)

// readBackoff is the wait between failed reads: readBackoffFirst, doubling up to
// readBackoffMax; reset after a good read. The zero value is ready.
type readBackoff struct{ next time.Duration }

// delay returns the next wait and doubles the one after it (capped).
func (b *readBackoff) delay() time.Duration {
	d := max(b.next, readBackoffFirst)
	b.next = min(2*d, readBackoffMax)
	return d
}

// reset starts the doubling again from readBackoffFirst.
func (b *readBackoff) reset() { b.next = 0 }

// wait sleeps for the next delay; it returns false (at once) when ctx ends first.
func (b *readBackoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.delay())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// linkToTap writes every frame received from the peer into the tap.
func (p *TapPort) linkToTap(ctx context.Context, link *Link) {
	for {
		frame, err := link.Recv(ctx)
		if err != nil {
			return // ctx ended or the link closed
		}
		if _, err := p.file.Write(frame); err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			p.writeErrors.Add(1)
			continue
		}
		p.toTap.Add(1)
	}
}

// Name returns the tap's interface name.
func (p *TapPort) Name() string { return p.name }

// Counters returns a snapshot of the port's counters.
func (p *TapPort) Counters() TapCounters {
	return TapCounters{FromTap: p.fromTap.Load(), SendRefused: p.sendRefused.Load(), ToTap: p.toTap.Load(),
		WriteErrors: p.writeErrors.Load(), Oversize: p.oversize.Load(), ReadErrors: p.readErrors.Load()}
}

// Close stops the port and removes the tap; the link keeps running. Closing twice is harmless.
func (p *TapPort) Close() error {
	p.cancel()
	<-p.done
	return nil
}

// Done is closed once the port has stopped.
func (p *TapPort) Done() <-chan struct{} { return p.done }
