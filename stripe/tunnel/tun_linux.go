//go:build linux

package tunnel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsplane/ovsplane/stripe/engine"
)

// Tunnel is one tun device carried by an engine. Its methods are safe for concurrent use.
type Tunnel struct {
	cfg    Config
	f      *os.File
	c      counters
	once   sync.Once
	closed atomic.Bool
	// offload says the device was opened with IFF_VNET_HDR and took TUNSETOFFLOAD; uso that the
	// offloads include UDP segmentation.
	offload, uso bool
}

// Offload flags of TUNSETOFFLOAD (include/uapi/linux/if_tun.h) and the ioctl itself.
const (
	tunFCsum      = 0x01
	tunFTSO4      = 0x02
	tunFTSO6      = 0x04
	tunFUSO4      = 0x20
	tunFUSO6      = 0x40
	tunSetOffload = 0x400454d0 // _IOW('T', 208, unsigned int)
)

// Open creates the tun device cfg.Name (IFF_TUN, no packet information) in the calling
// thread's network namespace, sets its MTU, transmit queue and address (which routes
// cfg.Addr's prefix through it) and brings it up. The device lives until Close. It needs
// CAP_NET_ADMIN.
func Open(ctx context.Context, cfg Config) (*Tunnel, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tunnel %s: %w", cfg.Name, err)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("tunnel %s: open /dev/net/tun: %w (load the tun module, run as root)", cfg.Name, err)
	}
	ifr, err := unix.NewIfreq(cfg.Name)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("tunnel %s: %w", cfg.Name, err)
	}
	flags := uint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if !cfg.NoOffload {
		flags |= unix.IFF_VNET_HDR
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("tunnel %s: TUNSETIFF: %w (a device of that name that is not a tun, or no CAP_NET_ADMIN)", cfg.Name, err)
	}
	t := &Tunnel{cfg: cfg}
	if !cfg.NoOffload {
		// TCP segmentation both ways and, where the kernel has it (6.2 and later), UDP's.
		t.offload, t.uso = true, true
		if err := unix.IoctlSetInt(fd, tunSetOffload, tunFCsum|tunFTSO4|tunFTSO6|tunFUSO4|tunFUSO6); err != nil {
			t.uso = false
			if err := unix.IoctlSetInt(fd, tunSetOffload, tunFCsum|tunFTSO4|tunFTSO6); err != nil {
				_ = unix.Close(fd)
				return nil, fmt.Errorf("tunnel %s: TUNSETOFFLOAD: %w (set Config.NoOffload on a kernel without tun offloads)", cfg.Name, err)
			}
		}
	}
	t.f = os.NewFile(uintptr(fd), "/dev/net/tun:"+cfg.Name)
	t.c.perConn = make([]atomic.Uint64, cfg.Conns)
	if err := t.configure(); err != nil {
		_ = t.f.Close()
		return nil, err
	}
	return t, nil
}

// configure sets the device's MTU, queue, address and netmask and brings it up.
func (t *Tunnel) configure() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("tunnel %s: configuration socket: %w", t.cfg.Name, err)
	}
	defer unix.Close(s)
	name := t.cfg.Name
	do := func(what string, req uint, set func(*unix.Ifreq) error) error {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return fmt.Errorf("tunnel %s: %w", name, err)
		}
		if err := set(ifr); err != nil {
			return fmt.Errorf("tunnel %s: %s: %w", name, what, err)
		}
		if err := unix.IoctlIfreq(s, req, ifr); err != nil {
			return fmt.Errorf("tunnel %s: %s: %w", name, what, err)
		}
		return nil
	}
	mask := netmask(t.cfg.Addr.Bits())
	steps := []struct {
		what string
		req  uint
		set  func(*unix.Ifreq) error
	}{
		{"set MTU", unix.SIOCSIFMTU, func(r *unix.Ifreq) error { r.SetUint32(uint32(t.cfg.MTU)); return nil }},
		{"set address", unix.SIOCSIFADDR, func(r *unix.Ifreq) error { return r.SetInet4Addr(t.cfg.Addr.Addr().AsSlice()) }},
		{"set netmask", unix.SIOCSIFNETMASK, func(r *unix.Ifreq) error { return r.SetInet4Addr(mask[:]) }},
	}
	if t.cfg.TxQueueLen > 0 {
		steps = append(steps, struct {
			what string
			req  uint
			set  func(*unix.Ifreq) error
		}{"set transmit queue", unix.SIOCSIFTXQLEN, func(r *unix.Ifreq) error { r.SetUint32(uint32(t.cfg.TxQueueLen)); return nil }})
	}
	for _, st := range steps {
		if err := do(st.what, st.req, st.set); err != nil {
			return err
		}
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return fmt.Errorf("tunnel %s: %w", name, err)
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("tunnel %s: read flags: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("tunnel %s: bring up: %w", name, err)
	}
	return nil
}

// Name is the device's name.
func (t *Tunnel) Name() string { return t.cfg.Name }

// MTU is the device's MTU.
func (t *Tunnel) MTU() int { return t.cfg.MTU }

// Run carries packets both ways until ctx ends or the tunnel is closed: device → engine.Send
// on the packet's connection, engine.Receive → device. An engine with a WaitRunning method
// (*engine.Engine) may be handed over before its Run runs: Run waits for it first, reading
// nothing meanwhile (the device's queue holds what the kernel routes in). It returns nil when
// ctx ended, an error wrapping ErrClosed after Close, or the engine's or device's error (one
// wrapping engine.ErrNotRunning when the engine's Run ended, before or during this one). Call
// it once at a time: two Runs would split the device's packets between them.
func (t *Tunnel) Run(ctx context.Context) error {
	if t.closed.Load() {
		return fmt.Errorf("tunnel %s: %w", t.cfg.Name, ErrClosed)
	}
	if w, ok := t.cfg.Engine.(runWaiter); ok {
		if err := w.WaitRunning(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("tunnel %s: %w", t.cfg.Name, err)
		}
	}
	if err := t.f.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("tunnel %s: %w", t.cfg.Name, err)
	}
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- t.toEngine(ctx) }()
	go func() { errc <- t.fromEngine(ctx) }()
	// the device read does not watch ctx: a deadline in the past wakes it.
	stop := context.AfterFunc(ctx, func() { _ = t.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	errs := []error{<-errc}
	cancel()
	errs = append(errs, <-errc)
	if outer.Err() != nil {
		// ctx ended: what failed meanwhile is its consequence (an engine run by the same ctx
		// ends, and Receive says ErrNotRunning before the device read sees the cancel).
		return nil
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	return nil
}

// toEngine reads the device and sends every packet to the peer.
func (t *Tunnel) toEngine(ctx context.Context) error {
	if t.offload {
		return t.toEngineOffload(ctx)
	}
	buf := make([]byte, t.cfg.MTU+1)
	for {
		n, err := t.f.Read(buf)
		if err != nil {
			return t.readErr(ctx, err)
		}
		t.c.reads.Add(1)
		if n > t.cfg.MTU {
			t.c.malformed.Add(1)
			continue
		}
		if err := t.send(ctx, buf[:n]); err != nil {
			return err
		}
	}
}

// Read batching: the first read of a batch waits, the others take only what is already
// queued, up to readBatch reads, into one arena of readArena bytes (a read needs room for a
// whole super-packet).
const (
	readBatch = 64
	readArena = 1 << 20
)

// sendBatch is one batch of packets read from the device: the arena the reads went into, the
// splitter that cut them, and the engine messages with their connection indexes.
type sendBatch struct {
	arena []byte
	sp    splitter
	ms    []engine.Message
	conns []int
	// try is the non-blocking read of tryRead, made once (a closure per read would allocate);
	// it reads into tryBuf and leaves the byte count in tryN.
	try    func(fd uintptr) bool
	tryBuf []byte
	tryN   int
}

// newSendBatch returns an empty batch for a device of MTU mtu.
func newSendBatch(mtu int) *sendBatch {
	b := &sendBatch{arena: make([]byte, readArena), sp: splitter{mtu: mtu}}
	b.try = func(fd uintptr) bool {
		b.tryN = 0
		if k, err := unix.Read(int(fd), b.tryBuf); err == nil && k > 0 {
			b.tryN = k
		}
		return true
	}
	return b
}

// toEngineOffload reads the device with its virtio_net_hdr, splits super-packets and sends
// every packet to the peer. Reads that find packets already queued join the batch, so
// datagrams and small packets go to the engine (and its links) together too. (Reading on a
// goroutine of its own, a batch ahead of the engine's sends, was measured slower on the shared
// 2-vCPU testbed: docs/stripe.md.)
func (t *Tunnel) toEngineOffload(ctx context.Context) error {
	rc, err := t.f.SyscallConn()
	if err != nil {
		return fmt.Errorf("tunnel %s: %w", t.cfg.Name, err)
	}
	bs, batch := t.cfg.Engine.(batchSender)
	b := newSendBatch(t.cfg.MTU)
	for {
		if err := t.fill(rc, b, batch); err != nil {
			return t.readErr(ctx, err)
		}
		if !batch {
			for _, m := range b.ms {
				if err := t.send(ctx, m.Payload); err != nil {
					return err
				}
			}
			continue
		}
		// the engine copies the payloads into its frames before SendBatch returns.
		if err := bs.SendBatch(ctx, b.ms); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("tunnel %s: %w", t.cfg.Name, err)
		}
		for k, m := range b.ms {
			t.c.txPackets.Add(1)
			t.c.txBytes.Add(uint64(len(m.Payload)))
			t.c.perConn[b.conns[k]].Add(1)
		}
	}
}

// fill empties b and reads into it: one read that waits, then, when more is true, up to
// readBatch − 1 reads of what is already queued; every packet is split and mapped to its
// connection. It fails only when the waiting read fails.
func (t *Tunnel) fill(rc syscall.RawConn, b *sendBatch, more bool) error {
	b.ms, b.conns = b.ms[:0], b.conns[:0]
	b.sp.reset()
	off := 0
	for r := 0; r < readBatch && len(b.arena)-off >= vnetHdrLen+maxIPPacket; r++ {
		buf := b.arena[off : off+vnetHdrLen+maxIPPacket]
		var n int
		if r == 0 {
			var err error
			if n, err = t.f.Read(buf); err != nil {
				return err
			}
		} else {
			b.tryBuf = buf
			_ = rc.Read(b.try)
			b.tryBuf = nil
			if n = b.tryN; n == 0 {
				break // nothing queued (or the read failed: the next waiting read reports it)
			}
		}
		off += n
		t.c.reads.Add(1)
		h, err := decodeVnetHdr(buf[:n])
		if err != nil {
			t.c.malformed.Add(1)
			continue
		}
		segs, err := b.sp.split(h, buf[vnetHdrLen:n])
		if err != nil {
			t.c.malformed.Add(1)
			t.cfg.Logger.Warn("tunnel: packet from the device dropped", "device", t.cfg.Name, "err", err)
			continue
		}
		for _, p := range segs {
			i, ok := connOf(p, t.cfg.Conns)
			if !ok {
				t.c.malformed.Add(1)
				continue
			}
			b.ms = append(b.ms, engine.Message{Conn: engine.Conn{Service: t.cfg.Service, SrcPort: uint16(i), DstPort: uint16(i)}, Payload: p})
			b.conns = append(b.conns, i)
		}
		if !more {
			break
		}
	}
	return nil
}

// runWaiter is the engine's optional wait for its Run (*engine.Engine has it).
type runWaiter interface {
	WaitRunning(ctx context.Context) error
}

// batchSender is the engine's optional batch send (*engine.Engine has it).
type batchSender interface {
	SendBatch(ctx context.Context, ms []engine.Message) error
}

// readErr is toEngine's error for a failed device read.
func (t *Tunnel) readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if t.closed.Load() {
		return fmt.Errorf("tunnel %s: %w", t.cfg.Name, ErrClosed)
	}
	return fmt.Errorf("tunnel %s: read: %w", t.cfg.Name, err)
}

// send hands one packet of at most the MTU to the engine on its connection.
func (t *Tunnel) send(ctx context.Context, p []byte) error {
	i, ok := connOf(p, t.cfg.Conns)
	if !ok {
		t.c.malformed.Add(1)
		return nil
	}
	c := engine.Conn{Service: t.cfg.Service, SrcPort: uint16(i), DstPort: uint16(i)}
	// the engine copies the payload into its frame before Send returns.
	if err := t.cfg.Engine.Send(ctx, engine.Message{Conn: c, Payload: p}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("tunnel %s: %w", t.cfg.Name, err)
	}
	t.c.txPackets.Add(1)
	t.c.txBytes.Add(uint64(len(p)))
	t.c.perConn[i].Add(1)
	return nil
}

// batchReceiver is the engine's optional batch receive (*engine.Engine has it).
type batchReceiver interface {
	ReceiveBatch(ctx context.Context, ds []engine.Delivery) (int, error)
}

// rxBatch bounds the deliveries fromEngine takes from the engine at once.
const rxBatch = 256

// fromEngine writes every packet from the peer to the device: with offloads, each batch of
// deliveries through the coalescer.
func (t *Tunnel) fromEngine(ctx context.Context) error {
	ds := make([]engine.Delivery, rxBatch)
	var co *coalescer
	if t.offload {
		co = newCoalescer(t.uso, func(b []byte) error {
			_, err := t.f.Write(b)
			if err == nil {
				t.c.writes.Add(1)
			}
			return err
		})
	}
	br, batch := t.cfg.Engine.(batchReceiver)
	rel, _ := t.cfg.Engine.(releaser)
	for {
		n := 1
		var err error
		if batch {
			n, err = br.ReceiveBatch(ctx, ds)
		} else {
			ds[0], err = t.cfg.Engine.Receive(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("tunnel %s: %w", t.cfg.Name, err)
		}
		for i := range ds[:n] {
			d := ds[i]
			if d.Conn.Service != t.cfg.Service {
				t.c.foreign.Add(1)
				continue
			}
			if _, ok := connOf(d.Payload, 1); !ok || len(d.Payload) > t.cfg.MTU {
				t.c.malformed.Add(1)
				continue
			}
			t.c.rxPackets.Add(1)
			t.c.rxBytes.Add(uint64(len(d.Payload)))
			if co == nil {
				// the sender may have offloads and leave the checksum partial: complete it.
				finishCsum(d.Payload)
				_, err := t.f.Write(d.Payload)
				if err == nil {
					t.c.writes.Add(1)
				}
				if err := t.writeErr(1, err); err != nil {
					return err
				}
				continue
			}
			if err := t.writeErr(co.add(d.Payload)); err != nil {
				return err
			}
		}
		if co != nil {
			if err := t.writeErr(co.flush()); err != nil {
				return err
			}
		}
		// written (the coalescer keeps nothing after its flush): the engine may reuse them.
		if rel != nil {
			rel.Release(ds[:n])
		}
		clear(ds[:n])
	}
}

// releaser is the engine's optional reuse of delivered payloads (*engine.Engine has it).
type releaser interface {
	Release(ds []engine.Delivery)
}

// writeErr counts failed device writes; it returns ErrClosed once the tunnel is closed. The
// kernel refuses a packet it cannot parse; the next may pass.
func (t *Tunnel) writeErr(failed int, err error) error {
	if err == nil {
		return nil
	}
	if t.closed.Load() {
		return fmt.Errorf("tunnel %s: %w", t.cfg.Name, ErrClosed)
	}
	t.c.writeErrors.Add(uint64(failed))
	t.cfg.Logger.Warn("tunnel: write to device failed", "device", t.cfg.Name, "writes", failed, "err", err)
	return nil
}

// Stats returns a snapshot of the counters.
func (t *Tunnel) Stats() Stats {
	s := Stats{
		TxPackets: t.c.txPackets.Load(), TxBytes: t.c.txBytes.Load(),
		RxPackets: t.c.rxPackets.Load(), RxBytes: t.c.rxBytes.Load(),
		Malformed: t.c.malformed.Load(), Foreign: t.c.foreign.Load(), WriteErrors: t.c.writeErrors.Load(),
		Reads: t.c.reads.Load(), Writes: t.c.writes.Load(), Offload: t.offload, UDPOffload: t.uso,
		PerConn: make([]uint64, len(t.c.perConn)),
	}
	for i := range t.c.perConn {
		s.PerConn[i] = t.c.perConn[i].Load()
	}
	return s
}

// Close removes the device and ends Run. Closing twice is harmless.
func (t *Tunnel) Close() error {
	var err error
	t.once.Do(func() {
		t.closed.Store(true)
		err = t.f.Close()
	})
	if err != nil {
		return fmt.Errorf("tunnel %s: close: %w", t.cfg.Name, err)
	}
	return nil
}
