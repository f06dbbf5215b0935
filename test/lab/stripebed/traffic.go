//go:build linux

package stripebed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// Bounds of the traffic generators.
const (
	// MaxTCPBytes bounds one TCP transfer.
	MaxTCPBytes = 64 << 30
	// MaxUDPDuration bounds one UDP stream.
	MaxUDPDuration = 5 * time.Minute
	// MaxUDPRate bounds a UDP stream's pace, bits/s.
	MaxUDPRate = 40e9
	// udpPayload is the datagram payload: one 1500-byte IPv4 packet.
	udpPayload = 1472
	// ioBuf is the TCP read and write size.
	ioBuf = 256 << 10
	// drainTime is how long the UDP receiver waits for stragglers after the sender stops.
	drainTime = 300 * time.Millisecond
)

// TCPSpec is one TCP connection from node A's Src to node B's Dst carrying Bytes.
type TCPSpec struct {
	// Src and Dst are the client's local and the server's address.
	Src, Dst netip.Addr
	// Bytes is what the client sends; 1 to MaxTCPBytes.
	Bytes int64
	// MPTCP opens both sockets with IPPROTO_MPTCP; TCPBulk fails when the connection falls back
	// to plain TCP.
	MPTCP bool
	// CC is the congestion control pinned on the client socket (TCP_CONGESTION), e.g. "cubic".
	CC string
	// SendFor, when not 0, caps the sending time (0 to MaxUDPDuration): the client stops
	// writing once SendFor passed since the connection was made, with bytes left, and the
	// transfer is checked against what it wrote (TCPResult.Capped). A path far slower than
	// the one Bytes was sized for then costs SendFor plus the drain of what is queued, not the
	// whole of Bytes at its rate.
	SendFor time.Duration
}

// TCPResult is what one TCPBulk measured.
type TCPResult struct {
	// Bytes is what the receiver counted (equal to the spec's Bytes on success).
	Bytes int64
	// Seconds is the receiver's time from its first byte to EOF.
	Seconds float64
	// BitsPerSecond is Bytes over Seconds.
	BitsPerSecond float64
	// CC is the congestion control the client socket reported after the transfer.
	CC string
	// Sent is what the client wrote: Bytes, or less when SendFor ended the sending first
	// (Capped).
	Sent   int64
	Capped bool
}

// TCPBulk moves spec.Bytes (or what spec.SendFor leaves time for) over one connection from
// node a to node b (sockets opened in the namespaces with Netns.Do) and checks the receiver
// counted every byte the client wrote. It ends with ctx.
func TCPBulk(ctx context.Context, a, b *lab.Netns, spec TCPSpec) (TCPResult, error) {
	what := fmt.Sprintf("TCP %s→%s (%d bytes, mptcp=%v, cc=%s)", spec.Src, spec.Dst, spec.Bytes, spec.MPTCP, spec.CC)
	if spec.Bytes < 1 || spec.Bytes > MaxTCPBytes || !spec.Src.IsValid() || !spec.Dst.IsValid() || spec.CC == "" {
		return TCPResult{}, fmt.Errorf("%s: need addresses, a congestion control and 1 to %d bytes", what, int64(MaxTCPBytes))
	}
	if spec.SendFor < 0 || spec.SendFor > MaxUDPDuration {
		return TCPResult{}, fmt.Errorf("%s: sending time cap %v: want 0 (none) to %v", what, spec.SendFor, MaxUDPDuration)
	}
	var ln net.Listener
	err := b.Do(func() (err error) {
		var lc net.ListenConfig
		lc.SetMultipathTCP(spec.MPTCP)
		ln, err = lc.Listen(ctx, "tcp", netip.AddrPortFrom(spec.Dst, 0).String())
		return err
	})
	if err != nil {
		return TCPResult{}, fmt.Errorf("%s: listen: %w", what, err)
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	type recvResult struct {
		r   TCPResult
		err error
	}
	recv := make(chan recvResult, 1)
	go func() {
		r, err := tcpReceive(ctx, ln)
		recv <- recvResult{r, err}
	}()
	sent, sendErr := tcpSend(ctx, a, spec, ln.Addr().String())
	if sendErr != nil {
		ln.Close()
	}
	r := <-recv
	r.r.CC, r.r.Sent, r.r.Capped = sent.cc, sent.bytes, sent.bytes < spec.Bytes
	if err := errors.Join(sendErr, r.err); err != nil {
		return r.r, fmt.Errorf("%s: %w", what, err)
	}
	return r.r, nil
}

// tcpReceive accepts one connection, reads it to EOF and writes the count back.
func tcpReceive(ctx context.Context, ln net.Listener) (TCPResult, error) {
	conn, err := ln.Accept()
	if err != nil {
		return TCPResult{}, fmt.Errorf("accept: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	buf := make([]byte, ioBuf)
	var r TCPResult
	var start time.Time
	for {
		k, err := conn.Read(buf)
		if k > 0 && r.Bytes == 0 {
			start = time.Now()
		}
		r.Bytes += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return r, fmt.Errorf("receive after %d bytes: %w", r.Bytes, err)
		}
	}
	if r.Bytes > 0 {
		r.Seconds = time.Since(start).Seconds()
	}
	if r.Seconds > 0 {
		r.BitsPerSecond = float64(r.Bytes) * 8 / r.Seconds
	}
	if err := binary.Write(conn, binary.BigEndian, r.Bytes); err != nil {
		return r, fmt.Errorf("report count: %w", err)
	}
	return r, nil
}

// sendResult is what tcpSend wrote and the congestion control its socket reported.
type sendResult struct {
	cc    string
	bytes int64
}

// tcpSend connects, pins the congestion control, writes the bytes (until spec.SendFor ends the
// sending, when set), half-closes and checks the receiver counted what it wrote.
func tcpSend(ctx context.Context, a *lab.Netns, spec TCPSpec, addr string) (sendResult, error) {
	var conn *net.TCPConn
	err := a.Do(func() error {
		d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(spec.Src, 0))}
		d.SetMultipathTCP(spec.MPTCP)
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, spec.CC)
			}); err != nil {
				return err
			}
			if serr != nil {
				return fmt.Errorf("set congestion control %q: %w", spec.CC, serr)
			}
			return nil
		}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		conn = c.(*net.TCPConn)
		return nil
	})
	if err != nil {
		return sendResult{}, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if spec.MPTCP {
		if ok, err := conn.MultipathTCP(); err != nil || !ok {
			return sendResult{}, fmt.Errorf("connection fell back to plain TCP (mptcp=%v, %v): is net.mptcp.enabled=1 in the namespace?", ok, err)
		}
	}
	var r sendResult
	if r.cc, err = socketCC(conn); err != nil {
		return r, err
	}
	buf := make([]byte, ioBuf)
	for i := range buf {
		buf[i] = byte(i)
	}
	var end time.Time
	if spec.SendFor > 0 {
		end = time.Now().Add(spec.SendFor)
	}
	for r.bytes < spec.Bytes {
		if !end.IsZero() {
			// A write blocks at most until the cap: what it wrote by then counts.
			if !time.Now().Before(end) {
				break
			}
			if err := conn.SetWriteDeadline(end); err != nil {
				return r, fmt.Errorf("send: %w", err)
			}
		}
		k, err := conn.Write(buf[:min(spec.Bytes-r.bytes, int64(len(buf)))])
		r.bytes += int64(k)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			return r, fmt.Errorf("send, %d of %d bytes written: %w", r.bytes, spec.Bytes, err)
		}
	}
	if err := conn.SetWriteDeadline(time.Time{}); err != nil {
		return r, fmt.Errorf("half-close: %w", err)
	}
	if err := conn.CloseWrite(); err != nil {
		return r, fmt.Errorf("half-close: %w", err)
	}
	var got int64
	if err := binary.Read(conn, binary.BigEndian, &got); err != nil {
		return r, fmt.Errorf("read the receiver's count: %w", err)
	}
	if got != r.bytes {
		return r, fmt.Errorf("receiver counted %d bytes, sent %d", got, r.bytes)
	}
	return r, nil
}

// socketCC reads the socket's TCP_CONGESTION.
func socketCC(conn *net.TCPConn) (string, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return "", fmt.Errorf("read congestion control: %w", err)
	}
	var cc string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		cc, gerr = getsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION)
	}); err != nil {
		return "", fmt.Errorf("read congestion control: %w", err)
	}
	if gerr != nil {
		return "", fmt.Errorf("read congestion control: %w", gerr)
	}
	return cc, nil
}

// getsockoptString reads a string socket option (at most 16 bytes, TCP_CA_NAME_MAX).
func getsockoptString(fd, level, opt int) (string, error) {
	buf := make([]byte, 16)
	n, err := getsockopt(fd, level, opt, buf)
	if err != nil {
		return "", err
	}
	for i, c := range buf[:n] {
		if c == 0 {
			return string(buf[:i]), nil
		}
	}
	return string(buf[:n]), nil
}

// UDPSpec is one stream of numbered datagrams from node A's Src to node B's Dst.
type UDPSpec struct {
	// Src and Dst are the sender's and the receiver's address.
	Src, Dst netip.Addr
	// RateBitsPerSec is the pace of the payload, 1 kbit/s to MaxUDPRate.
	RateBitsPerSec float64
	// Duration is how long the sender sends, up to MaxUDPDuration.
	Duration time.Duration
	// Payload is the datagram payload in bytes, 8 to 1472; 0: the largest that fits the path
	// MTU without fragments (the connected socket's IP_MTU minus 28), at most 1472. An
	// application that knows its path sends no fragments, so every arm sends what fits its own
	// path: 1472 bytes over 1500-byte links, 1444 over the stripe's 1472-byte tun.
	Payload int
}

// UDPResult is what one UDPStream measured. Loss and reordering are counted on sequence
// numbers.
type UDPResult struct {
	// Sent is the datagrams the sender handed to its socket (SendErrors of them refused).
	Sent, SendErrors int64
	// Received counts distinct datagrams received; Duplicates the extra copies.
	Received, Duplicates int64
	// Lost is Sent − Received.
	Lost int64
	// Reordered counts datagrams that arrived after one with a higher number; MaxReorder is the
	// largest such distance in datagrams.
	Reordered, MaxReorder int64
	// Payload is the datagram payload in bytes.
	Payload int
	// Seconds is the sender's time; OfferedBitsPerSecond and DeliveredBitsPerSecond are the
	// payload sent and received over it.
	Seconds                                      float64
	OfferedBitsPerSecond, DeliveredBitsPerSecond float64
}

// UDPStream sends a paced stream of numbered datagrams from node a to node b for spec.Duration
// and counts what arrived. It ends with ctx.
func UDPStream(ctx context.Context, a, b *lab.Netns, spec UDPSpec) (UDPResult, error) {
	what := fmt.Sprintf("UDP %s→%s (%.0f bit/s for %v)", spec.Src, spec.Dst, spec.RateBitsPerSec, spec.Duration)
	if !spec.Src.IsValid() || !spec.Dst.IsValid() || spec.RateBitsPerSec < 1e3 || spec.RateBitsPerSec > MaxUDPRate ||
		spec.Duration <= 0 || spec.Duration > MaxUDPDuration {
		return UDPResult{}, fmt.Errorf("%s: need addresses, a rate within [1 kbit/s, %.0f bit/s] and a duration within (0, %v]",
			what, float64(MaxUDPRate), MaxUDPDuration)
	}
	var rc, sc *net.UDPConn
	err := b.Do(func() (err error) {
		rc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(spec.Dst, 0)))
		return err
	})
	if err != nil {
		return UDPResult{}, fmt.Errorf("%s: listen: %w", what, err)
	}
	defer rc.Close()
	_ = rc.SetReadBuffer(8 << 20)
	err = a.Do(func() (err error) {
		sc, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(spec.Src, 0)),
			net.UDPAddrFromAddrPort(rc.LocalAddr().(*net.UDPAddr).AddrPort()))
		return err
	})
	if err != nil {
		return UDPResult{}, fmt.Errorf("%s: connect: %w", what, err)
	}
	defer sc.Close()
	payload, err := udpPayloadFor(sc, spec.Payload)
	if err != nil {
		return UDPResult{}, fmt.Errorf("%s: %w", what, err)
	}
	maxSeq := int64(spec.RateBitsPerSec*spec.Duration.Seconds()/float64(payload*8)) + 1024
	type recvResult struct{ r UDPResult }
	done := make(chan recvResult, 1)
	go func() { done <- recvResult{udpReceive(rc, maxSeq)} }()
	r := UDPResult{Payload: payload}
	buf := make([]byte, payload)
	start := time.Now()
	perDatagram := float64(payload*8) / spec.RateBitsPerSec // seconds
	tick := time.NewTicker(time.Millisecond)
	for ctx.Err() == nil {
		el := time.Since(start)
		if el >= spec.Duration {
			break
		}
		due := min(int64(el.Seconds()/perDatagram)+1, maxSeq)
		for r.Sent < due {
			binary.BigEndian.PutUint64(buf, uint64(r.Sent))
			if _, err := sc.Write(buf); err != nil {
				r.SendErrors++
			}
			r.Sent++
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	tick.Stop()
	r.Seconds = time.Since(start).Seconds()
	select {
	case <-ctx.Done():
	case <-time.After(drainTime):
	}
	_ = rc.SetReadDeadline(time.Now())
	got := (<-done).r
	if err := ctx.Err(); err != nil {
		return r, fmt.Errorf("%s: %w", what, err)
	}
	r.Received, r.Duplicates, r.Reordered, r.MaxReorder = got.Received, got.Duplicates, got.Reordered, got.MaxReorder
	r.Lost = r.Sent - r.Received
	if r.Seconds > 0 {
		r.OfferedBitsPerSecond = float64(r.Sent*int64(payload)) * 8 / r.Seconds
		r.DeliveredBitsPerSecond = float64(r.Received*int64(payload)) * 8 / r.Seconds
	}
	return r, nil
}

// udpReceive counts datagrams until the socket's deadline or close; numbers at or above
// maxSeq are ignored (a bound on the seen-set).
func udpReceive(c *net.UDPConn, maxSeq int64) UDPResult {
	var r UDPResult
	seen := make([]uint64, (maxSeq+63)/64)
	buf := make([]byte, 2048)
	high := int64(-1)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return r
		}
		if n < 8 {
			continue
		}
		seq := int64(binary.BigEndian.Uint64(buf))
		if seq < 0 || seq >= maxSeq {
			continue
		}
		w, bit := seq/64, uint64(1)<<(seq%64)
		if seen[w]&bit != 0 {
			r.Duplicates++
			continue
		}
		seen[w] |= bit
		r.Received++
		if seq < high {
			r.Reordered++
			r.MaxReorder = max(r.MaxReorder, high-seq)
		}
		high = max(high, seq)
	}
}
