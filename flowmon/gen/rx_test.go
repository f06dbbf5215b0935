package gen

import (
	"testing"
	"time"
)

func TestFlowRxSequences(t *testing.T) {
	s := validSpec()
	key := s.FlowKey(0)
	feed := func(seqs ...uint64) FlowRx {
		var f FlowRx
		now := time.Unix(100, 0)
		for _, q := range seqs {
			f.add(Parsed{Header: Header{Seq: q, SentNanos: now.UnixNano()}, Key: key, L3Len: 50}, 64, now)
			now = now.Add(time.Millisecond)
		}
		return f
	}
	for _, c := range []struct {
		name                      string
		seqs                      []uint64
		missing, dup, reord, pkts uint64
	}{
		{"in order", []uint64{0, 1, 2, 3}, 0, 0, 0, 4},
		{"gap", []uint64{0, 1, 4, 5}, 2, 0, 0, 4},
		{"first lost", []uint64{2, 3}, 2, 0, 0, 2},
		{"reordered", []uint64{0, 2, 1, 3}, 0, 0, 1, 4},
		{"duplicate", []uint64{0, 1, 1, 2}, 0, 1, 0, 4},
		{"late beyond window", []uint64{0, 100, 1}, 98, 0, 1, 3},
		{"duplicate after reorder", []uint64{0, 2, 1, 1}, 0, 1, 1, 4},
	} {
		f := feed(c.seqs...)
		if f.Missing != c.missing || f.Duplicates != c.dup || f.Reordered != c.reord || f.Packets != c.pkts {
			t.Errorf("%s %v: missing %d dup %d reord %d pkts %d, want %d %d %d %d", c.name, c.seqs,
				f.Missing, f.Duplicates, f.Reordered, f.Packets, c.missing, c.dup, c.reord, c.pkts)
		}
		if f.L3Bytes != 50*c.pkts || f.FrameBytes != 64*c.pkts {
			t.Errorf("%s: bytes L3 %d frame %d", c.name, f.L3Bytes, f.FrameBytes)
		}
	}
	var f FlowRx
	f.add(Parsed{Key: key}, 64, time.Now())
	f.add(Parsed{Key: s.FlowKey(1), Header: Header{Seq: 1}}, 64, time.Now())
	if f.KeyMismatches != 1 || f.Packets != 1 {
		t.Errorf("frame of another 5-tuple: mismatches %d packets %d, want 1 1", f.KeyMismatches, f.Packets)
	}
}

func TestCountsClassifiesFrames(t *testing.T) {
	s := validSpec()
	var c counts
	c.recv.Flows = make([]FlowRx, 2)
	now := time.Now()
	c.frame(buildFrame(s, 1, Header{Flow: 1}), now)
	c.frame(buildFrame(s, 5, Header{Flow: 5}), now) // beyond the receiver's 2 flows
	bad := buildFrame(s, 0, Header{Flow: 0})
	bad[payloadOff+12] ^= 0x80
	c.frame(bad, now)
	c.frame(make([]byte, 60), now)
	r := c.snapshot()
	if r.Flows[1].Packets != 1 || r.OutOfRange != 1 || r.Corrupt != 1 || r.Foreign != 1 || r.Flows[0].Packets != 0 {
		t.Errorf("counts %+v", r)
	}
}
