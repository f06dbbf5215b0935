package gen

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// seqWindow is how many sequence numbers below the highest one a flow remembers, to tell a late
// (reordered) frame from a duplicate.
const seqWindow = 64

// ReceiverSpec describes a receiver.
type ReceiverSpec struct {
	// Interface is the Linux interface to count on, in the namespace of the thread that opens
	// the Receiver. Required.
	Interface string
	// Flows is how many flows to count (the generator's Spec.Flows), 1..MaxFlows; frames of
	// higher flow indexes count as foreign.
	Flows int
}

// Validate checks the spec and returns an error naming the bad field and the fix, or nil.
func (s ReceiverSpec) Validate() error {
	switch {
	case s.Interface == "":
		return fmt.Errorf("receiver spec: Interface is empty: name the interface to count on")
	case len(s.Interface) >= 16:
		return fmt.Errorf("receiver spec: Interface %q is longer than 15 bytes: Linux interface names are at most 15", s.Interface)
	case s.Flows < 1 || s.Flows > MaxFlows:
		return fmt.Errorf("receiver spec: Flows %d is outside 1..%d: use the generator's Spec.Flows", s.Flows, MaxFlows)
	}
	return nil
}

// FlowRx is what a receiver counted for one flow.
type FlowRx struct {
	// Key is the 5-tuple of the flow's first frame.
	Key FlowKey
	// Packets counts every frame of the flow, duplicates included.
	Packets uint64
	// FrameBytes and L3Bytes add up the frames' lengths as received and their IPv4 total
	// lengths (the bytes NetFlow's dOctets count).
	FrameBytes, L3Bytes uint64
	// First and Last are when the first and the last frame arrived (zero when none did).
	First, Last time.Time
	// MaxSeq is the highest sequence number seen (valid when Packets > 0).
	MaxSeq uint64
	// Missing counts sequence numbers below MaxSeq not received (yet): gaps.
	Missing uint64
	// Duplicates counts frames whose sequence number had already arrived; Reordered counts
	// frames that arrived after a higher sequence number of their flow. A reordered frame
	// older than the receiver's window (64 numbers) is counted as reordered, never as a
	// duplicate.
	Duplicates, Reordered uint64
	// KeyMismatches counts frames with the flow's index but another 5-tuple (not counted in
	// Packets).
	KeyMismatches uint64
	// LatencySum and LatencyMax add up and bound the frames' send-to-receive times (clocks of
	// the same host).
	LatencySum, LatencyMax time.Duration

	window uint64 // bit i: sequence number MaxSeq-i has arrived
}

// add counts one frame of the flow received at now.
func (f *FlowRx) add(p Parsed, frameLen int, now time.Time) {
	if f.Packets > 0 && p.Key != f.Key {
		f.KeyMismatches++
		return
	}
	if f.Packets == 0 {
		f.Key, f.First = p.Key, now
		f.MaxSeq, f.window, f.Missing = p.Seq, 1, p.Seq
	} else {
		switch {
		case p.Seq > f.MaxSeq:
			d := p.Seq - f.MaxSeq
			f.Missing += d - 1
			if d >= seqWindow {
				f.window = 1
			} else {
				f.window = f.window<<d | 1
			}
			f.MaxSeq = p.Seq
		case f.MaxSeq-p.Seq >= seqWindow:
			f.Reordered++
			if f.Missing > 0 {
				f.Missing--
			}
		default:
			bit := uint64(1) << (f.MaxSeq - p.Seq)
			if f.window&bit != 0 {
				f.Duplicates++
			} else {
				f.window |= bit
				f.Reordered++
				if f.Missing > 0 { // an old duplicate beyond the window may have taken it
					f.Missing--
				}
			}
		}
	}
	f.Packets++
	f.FrameBytes += uint64(frameLen)
	f.L3Bytes += uint64(p.L3Len)
	f.Last = now
	lat := max(now.Sub(time.Unix(0, p.SentNanos)), 0)
	f.LatencySum += lat
	f.LatencyMax = max(f.LatencyMax, lat)
}

// Received is a snapshot of a receiver's counts.
type Received struct {
	// Interface is where the frames were counted.
	Interface string
	// Flows holds the counts per flow index, 0..ReceiverSpec.Flows-1.
	Flows []FlowRx
	// Foreign counts frames that were not generated ones (other traffic); Corrupt counts
	// generated frames with wrong lengths or checksums; OutOfRange counts generated frames of
	// a flow index at or above ReceiverSpec.Flows.
	Foreign, Corrupt, OutOfRange uint64
	// KernelPackets and KernelDrops are the socket's PACKET_STATISTICS: frames that reached the
	// socket and frames the kernel dropped because the socket's buffer was full.
	KernelPackets, KernelDrops uint64
}

// counts is a receiver's state, guarded by its mutex.
type counts struct {
	mu   sync.Mutex
	recv Received
}

// frame counts one frame received at now.
func (c *counts) frame(b []byte, now time.Time) {
	p, err := ParseFrame(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case errors.Is(err, ErrForeign):
		c.recv.Foreign++
	case err != nil:
		c.recv.Corrupt++
	case uint64(p.Flow) >= uint64(len(c.recv.Flows)):
		c.recv.OutOfRange++
	default:
		c.recv.Flows[p.Flow].add(p, len(b), now)
	}
}

// snapshot returns a copy of the counts.
func (c *counts) snapshot() Received {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.recv
	r.Flows = append([]FlowRx(nil), c.recv.Flows...)
	return r
}
