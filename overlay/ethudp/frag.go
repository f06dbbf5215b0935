package ethudp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// Encoded is what Encoder.Encode produced for one payload.
type Encoded struct {
	// Datagrams holds one datagram, or two UDPFRG halves (first, then second).
	Datagrams [][]byte
	// Compressed reports that the LZ4 block was sent (flag 0xff).
	Compressed bool
	// Fragmented reports that the body was split into two UDPFRG halves.
	Fragmented bool
}

// Encoder turns payloads into datagrams for one link. It holds the UDPFRG sequence counter: the
// first half of each fragmented datagram takes the current (even) number, the second half the
// next (odd) one, and the counter advances by 2 modulo 65536, as in the reference. An Encoder is
// not safe for concurrent use.
type Encoder struct {
	codec *Codec
	seq   uint16
}

// NewEncoder returns an encoder whose first fragmented datagram uses sequence numbers firstSeq
// and firstSeq+1; an odd firstSeq is rounded down (the reference starts at 0).
func (c *Codec) NewEncoder(firstSeq uint16) *Encoder {
	return &Encoder{codec: c, seq: firstSeq &^ 1}
}

// Encode seals payload (1–MaxPlainSize bytes) and, when the MTU is set and the sealed body is
// longer than MTU-28 bytes, splits it into two UDPFRG halves. A body that needs fragmentation
// but is longer than MaxFragmentableSize gets a *DropError with DropOversize: the reference
// drops it silently; lower the frame size (or the interface MTU) or unset the MTU option.
func (e *Encoder) Encode(payload []byte) (Encoded, error) {
	body, compressed, err := e.codec.Seal(payload)
	if err != nil {
		return Encoded{}, &DropError{Reason: DropOversize, Msg: "payload refused", Err: err}
	}
	mtu := e.codec.opts.MTU
	if mtu == 0 || len(body) <= mtu-UDPOverhead {
		return Encoded{Datagrams: [][]byte{body}, Compressed: compressed}, nil
	}
	if len(body) > MaxFragmentableSize {
		return Encoded{}, dropf(DropOversize, "sealed body of %d bytes exceeds MTU %d - %d and UDPFRG carries at most %d bytes: lower the frame size or unset the MTU option",
			len(body), mtu, UDPOverhead, MaxFragmentableSize)
	}
	first := make([]byte, FragHeaderSize+FragFirstSize)
	copy(first, FragMagic)
	binary.BigEndian.PutUint16(first[6:], e.seq)
	copy(first[FragHeaderSize:], body[:FragFirstSize])
	second := make([]byte, FragHeaderSize+len(body)-FragFirstSize)
	copy(second, FragMagic)
	binary.BigEndian.PutUint16(second[6:], e.seq+1)
	copy(second[FragHeaderSize:], body[FragFirstSize:])
	e.seq += 2
	return Encoded{Datagrams: [][]byte{first, second}, Compressed: compressed, Fragmented: true}, nil
}

// Defaults and bounds of the reassembly state.
const (
	// DefaultFragmentTimeout is how old a stored half may be when its pair arrives: the
	// reference drops a pair more than 1 s apart (it compares whole seconds, so it accepts up to
	// just under 2 s depending on the second boundary; this package uses the exact duration).
	DefaultFragmentTimeout = time.Second
	// DefaultMaxPendingHalves bounds the halves waiting for their pair (each at most 1000
	// bytes). The reference keeps a slot per sequence number (65536).
	DefaultMaxPendingHalves = 1024
	// MaxPendingHalvesLimit is the largest accepted MaxPendingHalves.
	MaxPendingHalvesLimit = 65536
)

type half struct {
	at   time.Time
	body []byte
}

// Message is a decoded datagram.
type Message struct {
	// Kind classifies Payload; KindHalf means a UDPFRG half was stored and Payload is nil.
	Kind Kind
	// Payload is the decoded payload (a frame or a control message), owned by the caller.
	Payload []byte
	// Compressed reports that the datagram carried an LZ4 block.
	Compressed bool
	// Reassembled reports that Payload came from two UDPFRG halves.
	Reassembled bool
	// Stale counts halves discarded during this call because they were older than the timeout
	// or evicted to stay within MaxPendingHalves.
	Stale int
}

// Decoder turns received datagrams into payloads for one link, holding the halves of fragmented
// datagrams until their pair arrives. Memory is bounded by MaxPendingHalves × 1000 bytes. A
// Decoder is not safe for concurrent use.
type Decoder struct {
	codec      *Codec
	timeout    time.Duration
	maxPending int
	pending    map[uint16]half
}

// NewDecoder returns a decoder. timeout ≤ 0 means DefaultFragmentTimeout; maxPending ≤ 0 means
// DefaultMaxPendingHalves; maxPending above MaxPendingHalvesLimit is an error.
func (c *Codec) NewDecoder(timeout time.Duration, maxPending int) (*Decoder, error) {
	if timeout <= 0 {
		timeout = DefaultFragmentTimeout
	}
	if maxPending <= 0 {
		maxPending = DefaultMaxPendingHalves
	}
	if maxPending > MaxPendingHalvesLimit {
		return nil, fmt.Errorf("ethudp: decoder: max pending halves %d: use 1-%d", maxPending, MaxPendingHalvesLimit)
	}
	return &Decoder{codec: c, timeout: timeout, maxPending: maxPending, pending: make(map[uint16]half)}, nil
}

// Pending returns the number of halves waiting for their pair.
func (d *Decoder) Pending() int { return len(d.pending) }

// Decode processes one received datagram at time now. When the MTU option is set and the
// datagram starts with "UDPFRG" it is a half: it is stored (Kind KindHalf) until its pair
// (sequence number xor 1) arrives within the timeout, and the two bodies are joined, the even
// one first. Then the body is opened (Codec.Open) and classified. Errors are *DropError values;
// Decode never panics and does not keep datagram.
func (d *Decoder) Decode(now time.Time, datagram []byte) (Message, error) {
	if len(datagram) == 0 {
		return Message{}, dropf(DropTruncated, "empty datagram")
	}
	if len(datagram) > MaxDatagramSize {
		return Message{}, dropf(DropOversize, "datagram of %d bytes exceeds %d", len(datagram), MaxDatagramSize)
	}
	var msg Message
	body := datagram
	if d.codec.opts.MTU > 0 && bytes.HasPrefix(datagram, []byte(FragMagic)) {
		if len(datagram) < FragHeaderSize {
			return Message{}, dropf(DropTruncated, "UDPFRG datagram of %d bytes is shorter than its %d-byte header", len(datagram), FragHeaderSize)
		}
		if len(datagram) > MaxFragDatagramSize {
			return Message{}, dropf(DropOversize, "UDPFRG datagram of %d bytes exceeds %d", len(datagram), MaxFragDatagramSize)
		}
		joined, stale := d.reassemble(now, binary.BigEndian.Uint16(datagram[6:]), datagram[FragHeaderSize:])
		msg.Stale = stale
		if joined == nil {
			msg.Kind = KindHalf
			return msg, nil
		}
		body, msg.Reassembled = joined, true
	}
	payload, compressed, err := d.codec.Open(body)
	if err != nil {
		return msg, err
	}
	msg.Payload, msg.Compressed, msg.Kind = payload, compressed, Classify(payload)
	if msg.Kind == KindFrame && len(payload) < MinFrameSize {
		return msg, dropf(DropTruncated, "frame of %d bytes is shorter than an Ethernet header (%d)", len(payload), MinFrameSize)
	}
	return msg, nil
}

// reassemble stores or joins one half; it returns the joined body or nil, and how many stale
// halves it discarded.
func (d *Decoder) reassemble(now time.Time, seq uint16, body []byte) ([]byte, int) {
	stale := 0
	pairSeq := seq ^ 1
	if p, ok := d.pending[pairSeq]; ok {
		age := now.Sub(p.at)
		if age <= d.timeout && age >= -d.timeout {
			delete(d.pending, pairSeq)
			joined := make([]byte, 0, len(p.body)+len(body))
			if seq&1 == 0 {
				joined = append(append(joined, body...), p.body...)
			} else {
				joined = append(append(joined, p.body...), body...)
			}
			return joined, 0
		}
		delete(d.pending, pairSeq)
		stale++
	}
	if _, ok := d.pending[seq]; ok {
		stale++ // the reference overwrites an unpaired half with the same number
	} else if len(d.pending) >= d.maxPending {
		stale += d.evict(now)
	}
	d.pending[seq] = half{at: now, body: bytes.Clone(body)}
	return nil, stale
}

// evict drops every stale half and, if the store is still full, the oldest one.
func (d *Decoder) evict(now time.Time) int {
	n := 0
	var oldest uint16
	var oldestAt time.Time
	first := true
	for s, h := range d.pending {
		if now.Sub(h.at) > d.timeout {
			delete(d.pending, s)
			n++
			continue
		}
		if first || h.at.Before(oldestAt) {
			oldest, oldestAt, first = s, h.at, false
		}
	}
	if len(d.pending) >= d.maxPending && !first {
		delete(d.pending, oldest)
		n++
	}
	return n
}
