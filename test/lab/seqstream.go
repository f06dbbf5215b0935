//go:build linux

package lab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// A numbered UDP stream: SendSeqStream sends datagrams whose first 8 bytes are a sequence
// number (big endian) from many source ports, SeqSinks record the numbers they receive, and
// CountSeqs tells how many of those sent were lost or duplicated across the sinks. Tests of
// traffic under change (select group weights, flow replacement) share it.

// SeqStream describes a stream: from Sources UDP sockets (source ports) in round robin, one
// datagram every Every, to Dst.
type SeqStream struct {
	Dst     *net.UDPAddr
	Sources int
	Every   time.Duration
}

// SeqSent is what SendSeqStream sent: N datagrams numbered 0..N-1, over Took.
type SeqSent struct {
	N    int
	Took time.Duration
	Err  error
}

// SendSeqStream sends the stream from namespace ns until ctx ends and returns what it sent.
// Err is set when a socket could not be opened or a datagram could not be sent (not when ctx
// ends).
func SendSeqStream(ctx context.Context, ns *Netns, s SeqStream) SeqSent {
	if s.Sources < 1 || s.Every <= 0 || s.Dst == nil {
		return SeqSent{Err: fmt.Errorf("seq stream: need a destination, at least one source and a positive interval, got %+v", s)}
	}
	var conns []*net.UDPConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	err := ns.Do(func() error {
		for range s.Sources {
			c, err := net.DialUDP("udp4", nil, s.Dst)
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		return SeqSent{Err: err}
	}
	start := time.Now()
	tick := time.NewTicker(s.Every)
	defer tick.Stop()
	buf := make([]byte, 64)
	n := 0
	for {
		select {
		case <-ctx.Done():
			return SeqSent{N: n, Took: time.Since(start)}
		case <-tick.C:
		}
		binary.BigEndian.PutUint64(buf, uint64(n))
		if _, err := conns[n%len(conns)].Write(buf); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return SeqSent{N: n, Took: time.Since(start)}
			}
			return SeqSent{N: n, Took: time.Since(start), Err: fmt.Errorf("datagram %d: %w", n, err)}
		}
		n++
	}
}

// SeqSink receives a stream's datagrams in one namespace and records their sequence numbers.
type SeqSink struct {
	conn *net.UDPConn
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	got  []uint64
}

// ListenSeq opens a sink's socket on addr inside ns and reads until Close (called when the
// test ends too).
func ListenSeq(t testing.TB, ns *Netns, addr *net.UDPAddr) *SeqSink {
	t.Helper()
	s := &SeqSink{done: make(chan struct{})}
	err := ns.Do(func() error {
		c, err := net.ListenUDP("udp4", addr)
		if err != nil {
			return err
		}
		s.conn = c
		return c.SetReadBuffer(8 << 20)
	})
	if err != nil {
		t.Fatalf("sink on %s in %s: %v", addr, ns, err)
	}
	go func() {
		defer close(s.done)
		buf := make([]byte, 64)
		for {
			n, err := s.conn.Read(buf)
			if err != nil {
				return
			}
			if n >= 8 {
				s.mu.Lock()
				s.got = append(s.got, binary.BigEndian.Uint64(buf[:8]))
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(s.Close)
	return s
}

// Count is the number of datagrams received so far.
func (s *SeqSink) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// Seqs returns the sequence numbers received so far, in arrival order.
func (s *SeqSink) Seqs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.got...)
}

// Close closes the socket and waits for the reader to end. Safe to call more than once.
func (s *SeqSink) Close() {
	s.once.Do(func() {
		s.conn.Close()
		<-s.done
	})
}

// SeqCount is the outcome of a stream across its sinks.
type SeqCount struct {
	PerSink   []int // datagrams each sink received
	Lost, Dup int   // numbers of 0..sent-1 no sink received; extra copies received
}

// CountSeqs closes the sinks and counts, among the sent datagrams numbered 0..sent-1, those
// no sink received and the extra copies. A number at or beyond sent is an error.
func CountSeqs(sent int, sinks ...*SeqSink) (SeqCount, error) {
	seen := make([]int, sent)
	c := SeqCount{PerSink: make([]int, len(sinks))}
	for k, s := range sinks {
		s.Close()
		for _, seq := range s.Seqs() {
			if seq >= uint64(sent) {
				return c, fmt.Errorf("sink %d got sequence number %d, beyond the %d sent", k, seq, sent)
			}
			seen[seq]++
			c.PerSink[k]++
		}
	}
	for _, n := range seen {
		switch {
		case n == 0:
			c.Lost++
		case n > 1:
			c.Dup += n - 1
		}
	}
	return c, nil
}

// The SeqRig's addresses: the source's, and the one every sink shares (address and MAC).
const (
	SeqSrcAddr = "10.97.0.1/24"
	SeqSinkIP  = "10.97.0.2"
	SeqSinkMAC = "02:00:0a:61:00:02"
	SeqPort    = 9999
)

// SeqRig is the set-up of a numbered stream through a switch: a source namespace and sink
// namespaces, each joined by a veth pair whose A end is in the switch's namespace, for the
// test to put on a bridge. Every sink has the same address and MAC (SeqSinkIP, SeqSinkMAC), so
// whichever sink port the switch chooses delivers; the source has a static neighbour entry
// for it, so no ARP crosses the switch. The stream goes from 64 source ports, one datagram
// every 500 µs, to SeqSinkIP:SeqPort, where each sink listens from the start.
type SeqRig struct {
	SrcNS  *Netns
	Src    *VethPair
	Sinks  []*VethPair
	Recv   []*SeqSink
	Stream SeqStream
}

// NewSeqRig builds a rig of n sinks whose A ends are in switchNS (nil: the test's own).
func NewSeqRig(t testing.TB, switchNS *Netns, n int) *SeqRig {
	t.Helper()
	r := &SeqRig{SrcNS: NewNetns(t),
		Stream: SeqStream{Dst: &net.UDPAddr{IP: net.ParseIP(SeqSinkIP), Port: SeqPort}, Sources: 64, Every: 500 * time.Microsecond}}
	r.Src = NewVethPair(t, VethSpec{ANetns: switchNS, BNetns: r.SrcNS, BAddr: SeqSrcAddr, DisableOffloads: true})
	r.SrcNS.Run(t, "ip", "neigh", "replace", SeqSinkIP, "lladdr", SeqSinkMAC, "dev", r.Src.B.Name)
	for range n {
		ns := NewNetns(t)
		v := NewVethPair(t, VethSpec{ANetns: switchNS, BNetns: ns, DisableOffloads: true})
		ns.Run(t, "ip", "link", "set", "dev", v.B.Name, "address", SeqSinkMAC)
		ns.Run(t, "ip", "addr", "add", SeqSinkIP+"/24", "dev", v.B.Name)
		r.Sinks = append(r.Sinks, v)
		r.Recv = append(r.Recv, ListenSeq(t, ns, r.Stream.Dst))
	}
	return r
}

// Send sends the rig's stream until ctx ends (SendSeqStream).
func (r *SeqRig) Send(ctx context.Context) SeqSent {
	return SendSeqStream(ctx, r.SrcNS, r.Stream)
}

// SendInBackground starts the rig's stream and returns stop, which ends it and returns what was
// sent; stop may be called more than once (later calls return the same result). The stream
// also stops when the test ends, so a test that fails half way leaves no sender behind.
func (r *SeqRig) SendInBackground(t testing.TB, ctx context.Context) (stop func() SeqSent) {
	sctx, cancel := context.WithCancel(ctx)
	sent := make(chan SeqSent, 1)
	go func() { sent <- r.Send(sctx) }()
	var once sync.Once
	var res SeqSent
	stop = func() SeqSent {
		once.Do(func() { cancel(); res = <-sent })
		return res
	}
	t.Cleanup(func() { stop() })
	return stop
}

// Counts returns the datagrams each sink received so far.
func (r *SeqRig) Counts() []int {
	out := make([]int, len(r.Recv))
	for k, s := range r.Recv {
		out[k] = s.Count()
	}
	return out
}
