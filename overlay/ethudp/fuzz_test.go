package ethudp

import (
	"testing"
	"time"
)

// FuzzDecode feeds arbitrary datagrams to decoders of every option combination, with a clock
// that moves by the input, and checks: no panic, errors are *DropError values, pending halves
// stay within the bound, and a decoded frame is within the size limits.
func FuzzDecode(f *testing.F) {
	c := mustCodec(f, Options{LZ4: 1, Cipher: CipherAES128, MTU: 1036})
	enc, err := c.NewEncoder(0).Encode(frame(make([]byte, 1300)))
	if err != nil {
		f.Fatal(err)
	}
	for _, d := range enc.Datagrams {
		f.Add(d, uint8(0), uint16(0))
	}
	f.Add([]byte("UDPFRG\x00\x01abc"), uint8(3), uint16(1500))
	f.Add([]byte("UDPFRG\x00"), uint8(1), uint16(0))
	f.Add(append(frame(nil), 0x42), uint8(2), uint16(0))
	f.Add([]byte{0x1f, 0x00, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff}, uint8(1), uint16(0))
	f.Add([]byte("PASSWORD:x\x00"), uint8(0), uint16(0))

	const maxPending = 8
	var decoders []*Decoder
	for _, lz := range []int{0, 1} {
		for _, ci := range allCiphers {
			for _, mtu := range []int{0, 1036} {
				codec := mustCodec(f, Options{LZ4: lz, Cipher: ci, MTU: mtu})
				d, err := codec.NewDecoder(time.Second, maxPending)
				if err != nil {
					f.Fatal(err)
				}
				decoders = append(decoders, d)
			}
		}
	}
	now := time.Unix(1_000_000, 0)
	f.Fuzz(func(t *testing.T, dgram []byte, which uint8, advanceMS uint16) {
		now = now.Add(time.Duration(advanceMS) * time.Millisecond)
		d := decoders[int(which)%len(decoders)]
		// the input, and the two halves it would make, so pairs actually meet
		for _, in := range [][]byte{dgram, append([]byte("UDPFRG\x00\x00"), dgram...), append([]byte("UDPFRG\x00\x01"), dgram...)} {
			msg, err := d.Decode(now, in)
			if err != nil {
				if _, ok := ReasonOf(err); !ok {
					t.Fatalf("error without a drop reason: %v", err)
				}
				continue
			}
			if d.Pending() > maxPending {
				t.Fatalf("%d pending halves, bound %d", d.Pending(), maxPending)
			}
			if msg.Kind != KindHalf && (len(msg.Payload) == 0 || len(msg.Payload) > MaxPlainSize) {
				t.Fatalf("payload of %d bytes", len(msg.Payload))
			}
			if msg.Kind == KindFrame && len(msg.Payload) < MinFrameSize {
				t.Fatalf("frame of %d bytes delivered", len(msg.Payload))
			}
		}
	})
}
