package gen

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// buildFrame returns flow i's frame with header h.
func buildFrame(s Spec, i int, h Header) []byte {
	tpl := newTemplate(s, i)
	b := make([]byte, s.FrameSize)
	tpl.write(b, h)
	return b
}

// rfc1071 is the textbook Internet checksum over b, computed independently of sum16/fold.
func rfc1071(b []byte) uint16 {
	var s uint64
	for i := 0; i+1 < len(b); i += 2 {
		s += uint64(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint64(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func TestFrameRoundTripAndChecksums(t *testing.T) {
	for _, size := range []int{64, 65, 512, 1448} {
		s := validSpec()
		s.FrameSize = size
		h := Header{Flow: 7, Seq: 1<<40 + 3, SentNanos: 1_700_000_000_123_456_789}
		f := buildFrame(s, 7, h)
		ip := f[EthHeaderLen:]
		if got := binary.BigEndian.Uint16(ip[2:]); int(got) != size-14 {
			t.Errorf("size %d: IPv4 total length %d, want %d", size, got, size-14)
		}
		if c := rfc1071(ip[:20]); c != 0 {
			t.Errorf("size %d: IPv4 header checksum does not verify (%#x)", size, c)
		}
		udp := ip[20:]
		pseudo := append(append(append([]byte{}, ip[12:20]...), 0, 17), byte(len(udp)>>8), byte(len(udp)))
		if c := rfc1071(append(pseudo, udp...)); c != 0 {
			t.Errorf("size %d: UDP checksum does not verify (%#x)", size, c)
		}
		p, err := ParseFrame(f)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if p.Header != h || p.L3Len != size-14 || p.Key != s.FlowKey(7) {
			t.Errorf("size %d: parsed %+v, want header %+v, L3 %d, key %v", size, p, h, size-14, s.FlowKey(7))
		}
	}
}

func TestParseFrameRejects(t *testing.T) {
	s := validSpec()
	good := buildFrame(s, 0, Header{Flow: 0, Seq: 1})
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for _, c := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"short", good[:40], ErrForeign},
		{"arp", mutate(func(b []byte) { b[12], b[13] = 0x08, 0x06 }), ErrForeign},
		{"tcp", mutate(func(b []byte) { b[EthHeaderLen+9] = 6 }), ErrForeign},
		{"wrong magic", mutate(func(b []byte) { b[payloadOff] ^= 0xff }), ErrForeign},
		{"payload bit flip", mutate(func(b []byte) { b[payloadOff+10] ^= 1 }), ErrCorrupt},
		{"ip header bit flip", mutate(func(b []byte) { b[EthHeaderLen+8] ^= 1 }), ErrCorrupt},
		{"ip length too long", mutate(func(b []byte) { b[EthHeaderLen+3]++ }), ErrCorrupt},
	} {
		if _, err := ParseFrame(c.frame); !errors.Is(err, c.want) {
			t.Errorf("%s: ParseFrame error %v, want %v", c.name, err, c.want)
		}
	}
	// A zero UDP checksum means "none" (RFC 768) and is accepted.
	noSum := mutate(func(b []byte) { b[EthHeaderLen+26], b[EthHeaderLen+27] = 0, 0 })
	if _, err := ParseFrame(noSum); err != nil {
		t.Errorf("frame without UDP checksum: %v", err)
	}
}

// FuzzParseFrame feeds arbitrary frames to ParseFrame and to a receiver's counting: no panic,
// and what parses holds together (lengths within the frame, the magic, a key).
func FuzzParseFrame(f *testing.F) {
	s := validSpec()
	for _, size := range []int{64, 100, 1448} {
		s.FrameSize = size
		f.Add(buildFrame(s, 3, Header{Flow: 3, Seq: 9, SentNanos: 1}))
	}
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseFrame(b)
		if err == nil {
			if p.L3Len < IPv4HeaderLen+UDPHeaderLen+HeaderLen || p.L3Len > len(b)-EthHeaderLen ||
				binary.BigEndian.Uint32(b[payloadOff:]) != Magic || !p.Key.Src.IsValid() {
				t.Fatalf("parsed %+v from %d bytes", p, len(b))
			}
		}
		var c counts
		c.recv.Flows = make([]FlowRx, 4)
		c.frame(b, time.Unix(1, 0))
		c.frame(b, time.Unix(2, 0))
		r := c.snapshot()
		if total := r.Foreign + r.Corrupt + r.OutOfRange + r.Flows[0].Packets + r.Flows[1].Packets + r.Flows[2].Packets +
			r.Flows[3].Packets + r.Flows[0].KeyMismatches + r.Flows[1].KeyMismatches + r.Flows[2].KeyMismatches +
			r.Flows[3].KeyMismatches; total != 2 {
			t.Fatalf("two frames counted %d times: %+v", total, r)
		}
	})
}
