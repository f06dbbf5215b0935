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
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// Latency sampling: small UDP requests from A answered by B, while one TCP connection from A to
// B carries a paced load.
const (
	// latencyInterval is the time between two requests.
	latencyInterval = 2 * time.Millisecond
	// latencyWarmup is the start of the load not sampled (slow start, queues filling).
	latencyWarmup = 500 * time.Millisecond
	// latencyRequest is a request's size: a sequence number and padding.
	latencyRequest = 64
	// maxLatencyRate bounds LatencySpec.LoadBitsPerSec.
	maxLatencyRate = 40e9
)

// LatencySpec is one latency measurement.
type LatencySpec struct {
	// Src and Dst are A's and B's addresses of the path measured (the load and the requests).
	Src, Dst netip.Addr
	// LoadBitsPerSec is the TCP load's pace, 1 Mbit/s to 40 Gbit/s.
	LoadBitsPerSec float64
	// Duration is how long the load runs, latencyWarmup plus at least one second, at most a
	// minute.
	Duration time.Duration
	// MPTCP opens the load's sockets with IPPROTO_MPTCP; CC is its congestion control.
	MPTCP bool
	CC    string
}

// LatencyResult is what one latency measurement found.
type LatencyResult struct {
	// P50 and P99 are the round-trip times' median and 99th percentile; Samples how many
	// requests were answered, Lost how many were not.
	P50, P99      time.Duration
	Samples, Lost int
	// LoadBitsPerSecond is what the TCP load delivered while the requests ran.
	LoadBitsPerSecond float64
}

// Latency runs a TCP connection from a to b paced to spec.LoadBitsPerSec (the application
// writes 16 KiB at its schedule) and, after latencyWarmup, sends a 64-byte UDP request every
// latencyInterval that b answers, on the same addresses; it reports the round-trip times'
// percentiles. A path that cannot carry the load runs saturated, and its queues show in the
// times.
func Latency(ctx context.Context, a, b *lab.Netns, spec LatencySpec) (LatencyResult, error) {
	what := fmt.Sprintf("latency %s→%s under %.0f bit/s", spec.Src, spec.Dst, spec.LoadBitsPerSec)
	if !spec.Src.IsValid() || !spec.Dst.IsValid() || spec.LoadBitsPerSec < 1e6 || spec.LoadBitsPerSec > maxLatencyRate ||
		spec.Duration < latencyWarmup+time.Second || spec.Duration > time.Minute || spec.CC == "" {
		return LatencyResult{}, fmt.Errorf("%s: need addresses, a congestion control, a load of 1 Mbit/s to 40 Gbit/s and a duration of %v to 1m",
			what, latencyWarmup+time.Second)
	}
	ctx, cancel := context.WithTimeout(ctx, spec.Duration+10*time.Second)
	defer cancel()
	var ln net.Listener
	var echo *net.UDPConn
	err := b.Do(func() (err error) {
		var lc net.ListenConfig
		lc.SetMultipathTCP(spec.MPTCP)
		if ln, err = lc.Listen(ctx, "tcp", netip.AddrPortFrom(spec.Dst, 0).String()); err != nil {
			return err
		}
		echo, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(spec.Dst, 0)))
		return err
	})
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return LatencyResult{}, fmt.Errorf("%s: listen: %w", what, err)
	}
	defer ln.Close()
	defer echo.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close(); echo.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { echoUDP(echo) })
	var sunk int64
	var sinkEnd time.Time
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		sunk, _ = io.Copy(io.Discard, c)
		sinkEnd = time.Now()
	})
	var conn *net.TCPConn
	var req *net.UDPConn
	err = a.Do(func() error {
		d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(spec.Src, 0))}
		d.SetMultipathTCP(spec.MPTCP)
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, spec.CC)
			}); err != nil {
				return err
			}
			return serr
		}
		c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		conn = c.(*net.TCPConn)
		req, err = net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(spec.Src, 0)), echo.LocalAddr().(*net.UDPAddr))
		return err
	})
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return LatencyResult{}, fmt.Errorf("%s: connect: %w", what, err)
	}
	defer req.Close()
	loadDone := make(chan error, 1)
	start := time.Now()
	go func() {
		defer conn.Close()
		loadDone <- pacedWrite(ctx, conn, spec.LoadBitsPerSec, spec.Duration)
	}()
	select {
	case <-time.After(latencyWarmup):
	case <-ctx.Done():
	}
	r, err := sampleRTT(ctx, req, start.Add(spec.Duration))
	if lerr := <-loadDone; err == nil {
		err = lerr
	}
	_ = conn.Close()
	_ = echo.Close()
	if err != nil {
		return r, fmt.Errorf("%s: %w", what, err)
	}
	wg.Wait()
	if d := sinkEnd.Sub(start).Seconds(); d > 0 {
		r.LoadBitsPerSecond = float64(sunk) * 8 / d
	}
	return r, nil
}

// pacedWrite writes 16 KiB chunks to c at rate bit/s for d, then half-closes. Like an
// application with a fixed rate, it does not catch up more than 100 ms it fell behind (a path
// that cannot carry the rate stays saturated, not ever further behind), and a write still
// blocked a second after d ends the load.
func pacedWrite(ctx context.Context, c *net.TCPConn, rate float64, d time.Duration) error {
	buf := make([]byte, 16<<10)
	per := time.Duration(float64(len(buf)*8) / rate * float64(time.Second))
	maxBehind := int64(100*time.Millisecond/per) + 1
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	if err := c.SetWriteDeadline(start.Add(d + time.Second)); err != nil {
		return fmt.Errorf("paced load: %w", err)
	}
	var sent int64
	for ctx.Err() == nil {
		el := time.Since(start)
		if el >= d {
			break
		}
		due := int64(el/per) + 1
		sent = max(sent, due-maxBehind)
		for ; sent < due && time.Since(start) < d; sent++ {
			if _, err := c.Write(buf); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return nil // saturated to the end
				}
				return fmt.Errorf("paced load: %w", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("paced load: %w", err)
	}
	return c.CloseWrite()
}

// echoUDP answers every datagram with itself until the socket closes.
func echoUDP(c *net.UDPConn) {
	buf := make([]byte, 2048)
	for {
		n, addr, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		_, _ = c.WriteToUDPAddrPort(buf[:n], addr)
	}
}

// sampleRTT sends a request every latencyInterval until end and measures each answer's round
// trip; answers later than the next request's send are read then (a reader goroutine).
func sampleRTT(ctx context.Context, c *net.UDPConn, end time.Time) (LatencyResult, error) {
	var mu sync.Mutex
	sentAt := map[uint64]time.Time{}
	var rtts []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			now := time.Now()
			if n < 8 {
				continue
			}
			seq := binary.BigEndian.Uint64(buf)
			mu.Lock()
			if t, ok := sentAt[seq]; ok {
				rtts = append(rtts, now.Sub(t))
				delete(sentAt, seq)
			}
			mu.Unlock()
		}
	}()
	req := make([]byte, latencyRequest)
	tick := time.NewTicker(latencyInterval)
	var seq uint64
	for time.Now().Before(end) && ctx.Err() == nil {
		binary.BigEndian.PutUint64(req, seq)
		mu.Lock()
		sentAt[seq] = time.Now()
		mu.Unlock()
		if _, err := c.Write(req); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			tick.Stop()
			return LatencyResult{}, fmt.Errorf("request: %w", err)
		}
		seq++
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	tick.Stop()
	select { // the last answers
	case <-time.After(200 * time.Millisecond):
	case <-ctx.Done():
	}
	_ = c.SetReadDeadline(time.Now())
	<-done
	mu.Lock()
	defer mu.Unlock()
	r := LatencyResult{Samples: len(rtts), Lost: len(sentAt)}
	if len(rtts) == 0 {
		return r, fmt.Errorf("none of %d requests answered", seq)
	}
	slices.Sort(rtts)
	r.P50, r.P99 = rtts[len(rtts)/2], rtts[min(len(rtts)-1, len(rtts)*99/100)]
	return r, nil
}
