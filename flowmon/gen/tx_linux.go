//go:build linux

package gen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TX ring geometry (TPACKET_V2): ringFrames slots of ringFrameSize bytes in blocks of
// ringBlockSize, 512 KiB mapped.
const (
	ringFrameSize = 2048
	ringBlockSize = 64 << 10
	ringBlocks    = 8
	ringFrames    = ringBlocks * ringBlockSize / ringFrameSize
	// ringDataOff is where a TX slot's frame starts: TPACKET2_HDRLEN - sizeof(sockaddr_ll),
	// i.e. TPACKET_ALIGN(sizeof(tpacket2_hdr)).
	ringDataOff = 32
	// sendBatch is how many frames MethodSend sends per call of send.
	sendBatch = 64
	// sendTimeout bounds one blocking send, so a stuck queue cannot hold Run past ctx.
	sendTimeout = time.Second
	// retryPause is the wait after the kernel refused a frame for lack of buffers.
	retryPause = 50 * time.Microsecond
)

// NewGenerator validates spec, opens an AF_PACKET socket bound to spec.Interface in the calling
// thread's network namespace and sets up its send path: the TPACKET_V2 TX ring for MethodRing,
// send(2) for MethodSend, and for MethodAuto the ring unless the kernel refuses it (Method then
// reports MethodSend). Needs CAP_NET_RAW. The caller must Close it (Run does too).
func NewGenerator(spec Spec) (*Generator, error) {
	g, err := newGenerator(spec)
	if err != nil {
		return nil, err
	}
	fd, err := openPacket(spec.Interface, 0)
	if err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	tv := unix.NsecToTimeval(sendTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("generator on %s: SO_SNDTIMEO: %w", spec.Interface, err)
	}
	if spec.Method != MethodSend {
		r, err := newRing(fd, spec.FrameSize)
		if err == nil {
			g.tx, g.method = r, MethodRing
			return g, nil
		}
		if spec.Method == MethodRing {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("generator on %s: the kernel refused the TX ring (use MethodAuto or MethodSend): %w", spec.Interface, err)
		}
		// The socket may have its PACKET_VERSION changed; a fresh one sends plainly.
		_ = unix.Close(fd)
		if fd, err = openPacket(spec.Interface, 0); err != nil {
			return nil, fmt.Errorf("generator: %w", err)
		}
	}
	g.tx, g.method = &plainSender{fd: fd, buf: make([]byte, spec.FrameSize)}, MethodSend
	return g, nil
}

// openPacket opens an AF_PACKET raw socket for protocol proto (network order; 0 receives
// nothing) bound to the interface name.
func openPacket(name string, proto uint16) (int, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return -1, fmt.Errorf("interface %s: %w (is it in this network namespace?)", name, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		return -1, fmt.Errorf("interface %s: AF_PACKET socket (needs CAP_NET_RAW): %w", name, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifc.Index}); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("interface %s: bind AF_PACKET socket: %w", name, err)
	}
	return fd, nil
}

// htons converts a 16-bit value to network order.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// ring is a mapped TPACKET_V2 TX ring. Send fills slots from cur on, marks them
// TP_STATUS_SEND_REQUEST and makes one blocking sendto(2), which returns when the kernel has
// sent them all; the kernel's ring head advances with cur.
type ring struct {
	fd        int
	mem       []byte
	cur       int
	frameSize int
}

// newRing switches fd to TPACKET_V2 and maps a TX ring.
func newRing(fd, frameSize int) (*ring, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, fmt.Errorf("TPACKET_V2: %w", err)
	}
	req := unix.TpacketReq{Block_size: ringBlockSize, Block_nr: ringBlocks, Frame_size: ringFrameSize, Frame_nr: ringFrames}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return nil, fmt.Errorf("PACKET_TX_RING of %d × %d bytes: %w", ringFrames, ringFrameSize, err)
	}
	mem, err := unix.Mmap(fd, 0, ringBlocks*ringBlockSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap TX ring: %w", err)
	}
	return &ring{fd: fd, mem: mem, frameSize: frameSize}, nil
}

// status returns slot i's tp_status word.
func (r *ring) status(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&r.mem[i*ringFrameSize]))
}

func (r *ring) batch() int { return ringFrames }

func (r *ring) send(ctx context.Context, n int, fill func([]byte, int)) (int, uint64, error) {
	first := r.cur
	queued := 0
	for ; queued < n; queued++ {
		st := r.status(r.cur)
		switch v := atomic.LoadUint32(st); v {
		case unix.TP_STATUS_AVAILABLE:
		default:
			return 0, 0, fmt.Errorf("TX ring slot %d has status %#x before use", r.cur, v)
		}
		off := r.cur * ringFrameSize
		fill(r.mem[off+ringDataOff:off+ringDataOff+r.frameSize], queued)
		*(*uint32)(unsafe.Pointer(&r.mem[off+4])) = uint32(r.frameSize) // tp_len
		atomic.StoreUint32(st, unix.TP_STATUS_SEND_REQUEST)
		r.cur = (r.cur + 1) % ringFrames
	}
	var retries uint64
	for {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(r.fd), 0, 0, 0, 0, 0)
		if e == 0 {
			break
		}
		if e == unix.EINTR || e == unix.ENOBUFS || e == unix.EAGAIN || e == unix.ETIMEDOUT {
			if ctx.Err() != nil {
				return r.countSent(first, queued), retries, fmt.Errorf("sendto TX ring: %w (then %w)", e, ctx.Err())
			}
			retries++
			sleep(ctx, retryPause)
			continue
		}
		return r.countSent(first, queued), retries, fmt.Errorf("sendto TX ring: %w", e)
	}
	for i := range queued {
		if v := atomic.LoadUint32(r.status((first + i) % ringFrames)); v != unix.TP_STATUS_AVAILABLE {
			return i, retries, fmt.Errorf("TX ring slot %d has status %#x after send", (first+i)%ringFrames, v)
		}
	}
	return queued, retries, nil
}

// countSent returns how many of the queued slots from first on the kernel has given back.
func (r *ring) countSent(first, queued int) int {
	for i := range queued {
		if atomic.LoadUint32(r.status((first+i)%ringFrames)) != unix.TP_STATUS_AVAILABLE {
			return i
		}
	}
	return queued
}

func (r *ring) close() error {
	return errors.Join(unix.Munmap(r.mem), unix.Close(r.fd))
}

// plainSender sends each frame with send(2) from one buffer.
type plainSender struct {
	fd  int
	buf []byte
}

func (p *plainSender) batch() int { return sendBatch }

func (p *plainSender) send(ctx context.Context, n int, fill func([]byte, int)) (int, uint64, error) {
	var retries uint64
	for j := range n {
		fill(p.buf, j)
		for {
			_, err := unix.Write(p.fd, p.buf)
			if err == nil {
				break
			}
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) {
				if ctx.Err() != nil {
					return j, retries, fmt.Errorf("send: %w (then %w)", err, ctx.Err())
				}
				retries++
				sleep(ctx, retryPause)
				continue
			}
			return j, retries, fmt.Errorf("send: %w", err)
		}
	}
	return n, retries, nil
}

func (p *plainSender) close() error { return unix.Close(p.fd) }
