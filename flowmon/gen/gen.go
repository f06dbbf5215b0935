package gen

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Sent is what a generator run handed to the kernel.
type Sent struct {
	// Spec is the run's spec.
	Spec Spec
	// Method is the send path used: MethodRing or MethodSend.
	Method Method
	// Start and End bound the run.
	Start, End time.Time
	// Packets is the number of frames the kernel accepted over all flows; frame k went to flow
	// k mod Flows with sequence number k div Flows (see FlowPackets).
	Packets uint64
	// Retries counts sends the kernel refused for lack of buffers (ENOBUFS, EAGAIN) and that
	// were retried.
	Retries uint64
}

// FlowPackets returns how many frames flow i (0..Flows-1) was sent.
func (s Sent) FlowPackets(i int) uint64 {
	f := uint64(max(s.Spec.Flows, 1))
	n := s.Packets / f
	if uint64(i) < s.Packets%f {
		n++
	}
	return n
}

// txPath hands frames to the kernel.
type txPath interface {
	// send fills up to n frames with fill(frame, j) for j = 0, 1, … (frame has len FrameSize and
	// zeros past the payload header) and sends them; it returns how many the kernel accepted,
	// in order, and how many sends it retried.
	send(ctx context.Context, n int, fill func(frame []byte, j int)) (sent int, retries uint64, err error)
	// batch is the largest n send takes at once.
	batch() int
	close() error
}

// Generator sends one Spec's frames into its interface. Open it with NewGenerator, Run it once,
// Close it.
type Generator struct {
	spec      Spec
	method    Method
	tx        txPath
	templates []template
}

// Method returns the send path the generator uses: MethodRing or MethodSend.
func (g *Generator) Method() Method { return g.method }

// Close releases the socket and its ring. It is safe to call more than once.
func (g *Generator) Close() error {
	if g.tx == nil {
		return nil
	}
	err := g.tx.close()
	g.tx = nil
	return err
}

// Run sends frames until Spec.Count frames are accepted, Spec.Duration has passed, or ctx ends,
// pacing them with a token bucket (a burst of at most 10 ms of frames, or one batch) when the
// spec sets a rate. It returns what was sent; the error is ctx's (wrapped) when ctx ended the
// run early, or the kernel's when a send failed; Sent is valid either way. A Generator runs
// once.
func (g *Generator) Run(ctx context.Context) (Sent, error) {
	s := Sent{Spec: g.spec, Method: g.method, Start: time.Now()}
	if g.tx == nil {
		s.End = s.Start
		return s, fmt.Errorf("generator on %s: closed or already run", g.spec.Interface)
	}
	defer func() { _ = g.Close() }()
	rate := g.spec.packetRate()
	batch := g.tx.batch()
	burst := math.Max(1, math.Min(float64(batch), rate/100))
	tokens, last := burst, s.Start
	var deadline time.Time
	if g.spec.Duration > 0 {
		deadline = s.Start.Add(g.spec.Duration)
	}
	flows := uint64(g.spec.Flows)
	fill := func(frame []byte, j int) {
		k := s.Packets + uint64(j)
		f := k % flows
		g.templates[f].write(frame, Header{Flow: uint32(f), Seq: (k / flows) & maxSeq, SentNanos: time.Now().UnixNano()})
	}
	for {
		if err := ctx.Err(); err != nil {
			s.End = time.Now()
			return s, fmt.Errorf("generator on %s: stopped after %d frames: %w", g.spec.Interface, s.Packets, err)
		}
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			break
		}
		n := batch
		if g.spec.Count > 0 {
			if s.Packets >= g.spec.Count {
				break
			}
			n = int(min(uint64(n), g.spec.Count-s.Packets))
		}
		if rate > 0 {
			tokens = math.Min(burst, tokens+now.Sub(last).Seconds()*rate)
			last = now
			if tokens < 1 {
				wait := time.Duration((1 - tokens) / rate * float64(time.Second))
				sleep(ctx, min(max(wait, 20*time.Microsecond), 10*time.Millisecond))
				continue
			}
			n = min(n, int(tokens))
		}
		sent, retries, err := g.tx.send(ctx, n, fill)
		s.Packets += uint64(sent)
		s.Retries += retries
		if rate > 0 {
			tokens -= float64(sent)
		}
		if err != nil {
			s.End = time.Now()
			return s, fmt.Errorf("generator on %s: after %d frames: %w", g.spec.Interface, s.Packets, err)
		}
	}
	s.End = time.Now()
	return s, nil
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// newGenerator validates spec and builds the templates; the caller opens the send path.
func newGenerator(spec Spec) (*Generator, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{spec: spec, templates: make([]template, spec.Flows)}
	for i := range g.templates {
		g.templates[i] = newTemplate(spec, i)
	}
	return g, nil
}
