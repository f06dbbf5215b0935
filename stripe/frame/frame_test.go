package frame

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/ovsplane/ovsplane/stripe/toeplitz"
)

func sample() Header {
	return Header{Flags: FlagReset, Service: 0x0102, SrcNode: 0x03040506, DstNode: 0x0708090a,
		SrcPort: 0x0b0c, DstPort: 0x0d0e, Seq: 0x1112131415161718}
}

// TestLayout pins every byte of the documented table.
func TestLayout(t *testing.T) {
	b, err := Append(nil, sample(), []byte("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hex.DecodeString("01" + "02" + "0102" + "03040506" + "0708090a" + "0b0c" + "0d0e" + "1112131415161718" + "0002" + "0000" + "6869")
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded\n %x\nwant\n %x", b, want)
	}
	// Bytes 2..15 are the toeplitz flow tuple.
	h := sample()
	tu := toeplitz.Tuple{Service: h.Service, SrcNode: h.SrcNode, DstNode: h.DstNode, SrcPort: h.SrcPort, DstPort: h.DstPort}.Bytes()
	if !bytes.Equal(b[2:16], tu[:]) {
		t.Errorf("header bytes 2..15 %x, tuple %x", b[2:16], tu)
	}
}

func TestRoundTripAndPadding(t *testing.T) {
	h := sample()
	b, err := Append([]byte("prefix"), h, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	b = append(b[len("prefix"):], 0, 0, 0) // Ethernet-style padding
	got, p, err := Decode(b)
	h.Length = 7
	if err != nil || got != h || string(p) != "payload" {
		t.Fatalf("Decode = %+v, %q, %v; want %+v, payload", got, p, err, h)
	}
	if cap(p) != len(p) {
		t.Errorf("payload capacity %d reaches into the padding", cap(p))
	}
}

func TestRejects(t *testing.T) {
	good, _ := Append(nil, sample(), []byte("abc"))
	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"short header", good[:HeaderLen-1], ErrTruncated},
		{"short payload", good[:len(good)-1], ErrTruncated},
		{"length too big", mod(func(b []byte) { b[24], b[25] = 0xff, 0xff }), ErrTruncated},
		{"version 0", mod(func(b []byte) { b[0] = 0 }), ErrVersion},
		{"version 2", mod(func(b []byte) { b[0] = 2 }), ErrVersion},
		{"unknown flag", mod(func(b []byte) { b[1] |= 0x80 }), ErrFlags},
		{"reserved", mod(func(b []byte) { b[27] = 1 }), ErrReserved},
	} {
		if _, _, err := Decode(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := Append(nil, Header{}, make([]byte, MaxPayload+1)); !errors.Is(err, ErrTooLong) {
		t.Errorf("oversized payload: %v", err)
	}
	if _, err := Append(nil, Header{Flags: 0x40}, nil); !errors.Is(err, ErrFlags) {
		t.Errorf("unknown flag encoded: %v", err)
	}
	if err := sample().Put(make([]byte, HeaderLen-1)); !errors.Is(err, ErrTruncated) {
		t.Errorf("Put into a short buffer: %v", err)
	}
	if b, err := Append(nil, Header{}, make([]byte, MaxPayload)); err != nil || len(b) != HeaderLen+MaxPayload {
		t.Errorf("MaxPayload: %d bytes, %v", len(b), err)
	}
}

// FuzzDecode: Decode never panics; whatever it accepts re-encodes to the same bytes; and
// decode(encode(h)) == h for headers built from the input.
func FuzzDecode(f *testing.F) {
	good, _ := Append(nil, sample(), []byte("abc"))
	f.Add(good)
	f.Add(good[:HeaderLen])
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := Decode(b)
		if err == nil {
			if len(p) != int(h.Length) {
				t.Fatalf("payload %d bytes, length field %d", len(p), h.Length)
			}
			re, err := Append(nil, h, p)
			if err != nil {
				t.Fatalf("re-encode of a decoded header: %v", err)
			}
			if !bytes.Equal(re, b[:HeaderLen+len(p)]) {
				t.Fatalf("re-encoded %x, input %x", re, b)
			}
		}
		// Build a header from the input bytes and round-trip it.
		var raw [HeaderLen]byte
		copy(raw[:], b)
		in := Header{Flags: Flags(raw[1]) & knownFlags, Service: uint16(raw[2])<<8 | uint16(raw[3]),
			SrcNode: uint32(raw[4])<<24 | uint32(raw[5]), DstNode: uint32(raw[8]) | uint32(raw[9])<<16,
			SrcPort: uint16(raw[12]), DstPort: uint16(raw[14]) << 8, Seq: uint64(raw[16])<<56 | uint64(raw[23])}
		payload := b[min(len(b), HeaderLen):]
		payload = payload[:min(len(payload), MaxPayload)]
		enc, err := Append(nil, in, payload)
		if err != nil {
			t.Fatalf("encode %+v: %v", in, err)
		}
		out, op, err := Decode(enc)
		in.Length = uint16(len(payload))
		if err != nil || out != in || !bytes.Equal(op, payload) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", in, out, err)
		}
	})
}
