package ethudp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func mustCodec(t testing.TB, o Options) *Codec {
	t.Helper()
	c, err := NewCodec(o, nil)
	if err != nil {
		t.Fatalf("NewCodec(%+v): %v", o, err)
	}
	return c
}

func mustDecoder(t testing.TB, c *Codec) *Decoder {
	t.Helper()
	d, err := c.NewDecoder(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// frame builds an Ethernet frame: broadcast destination, a fixed source, EtherType 0x88b5 (local
// experimental) and body.
func frame(body []byte) []byte {
	f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5}
	return append(f, body...)
}

// Golden vectors, each derived by hand from EthUDP.c's logic (see the comments); the AES ones
// were computed with the openssl command line (an independent implementation), as noted.
func TestGoldenVectors(t *testing.T) {
	hello := frame([]byte("hello"))
	cases := []struct {
		name    string
		opts    Options
		payload []byte
		want    [][]byte
	}{{
		// No option: do_encrypt is not called and send_udp_to_remote writes the frame as is.
		name: "plain frame", payload: hello, want: [][]byte{hello},
	}, {
		// -lz4 1 on 10 bytes: LZ4 emits a token and 10 literals (11 bytes, not shorter), so the
		// reference sends the input with 0xaa appended.
		name: "lz4 incompressible ping", opts: Options{LZ4: 1}, payload: []byte(PingMessage),
		want: [][]byte{append([]byte(PingMessage), 0xaa)},
	}, {
		// -enc xor with no -k: key "123456"; byte i is xored with key[i%6]:
		// 'P'^'1'=0x61 'I'^'2'=0x7b 'N'^'3'=0x7d 'G'^'4'=0x73 ':'^'5'=0x0f 'P'^'6'=0x66
		// 'I'^'1'=0x78 'N'^'2'=0x7c 'G'^'3'=0x74 ':'^'4'=0x0e.
		name: "xor default key ping", opts: Options{Cipher: CipherXOR}, payload: []byte(PingMessage),
		want: [][]byte{unhex(t, "617b7d730f66787c740e")},
	}, {
		// lz4 then xor: the 11 bytes above with the 0xaa flag; 0xaa ^ key[10%6]='5' (0x35) = 0x9f.
		name: "lz4+xor ping", opts: Options{LZ4: 1, Cipher: CipherXOR}, payload: []byte(PingMessage),
		want: [][]byte{unhex(t, "617b7d730f66787c740e9f")},
	}, {
		// -enc aes-128 with no -k: key "123456" zero-padded to 16 bytes, zero IV, PKCS#7:
		// printf 'PING:PING:' | openssl enc -aes-128-cbc -K 3132333435360000…00 -iv 00…00
		name: "aes-128 ping", opts: Options{Cipher: CipherAES128}, payload: []byte(PingMessage),
		want: [][]byte{unhex(t, "b23a6737d89c2482ed6d578acd7668ab")},
	}, {
		// -k 123456 without -enc means aes-128; same vector.
		name: "key alone means aes-128", opts: Options{Key: "123456"}, payload: []byte(PingMessage),
		want: [][]byte{unhex(t, "b23a6737d89c2482ed6d578acd7668ab")},
	}, {
		// aes-256: key zero-padded to 32 bytes; openssl as above with -aes-256-cbc.
		name: "aes-256 ping", opts: Options{Cipher: CipherAES256}, payload: []byte(PingMessage),
		want: [][]byte{unhex(t, "62a3ba429b8175f639194c650b31d372")},
	}, {
		// lz4 then aes-128: 'PING:PING:' + 0xaa (11 bytes) encrypted:
		// printf 'PING:PING:\xaa' | openssl enc -aes-128-cbc -K 3132…00 -iv 00…00
		name: "lz4+aes-128 ping", opts: Options{LZ4: 1, Cipher: CipherAES128}, payload: []byte(PingMessage),
		want: [][]byte{unhex(t, "4aeacf0b8bc7cea450208f67c9a80f62")},
	}, {
		// -p secret: snprintf "PASSWORD:%s" and len++ to include the NUL.
		name: "password", payload: mustPassword(t, "secret"),
		want: [][]byte{append([]byte("PASSWORD:secret"), 0)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCodec(t, tc.opts)
			got, err := c.NewEncoder(0).Encode(tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Datagrams) != len(tc.want) {
				t.Fatalf("got %d datagrams, want %d", len(got.Datagrams), len(tc.want))
			}
			for i := range tc.want {
				if !bytes.Equal(got.Datagrams[i], tc.want[i]) {
					t.Errorf("datagram %d = %x, want %x", i, got.Datagrams[i], tc.want[i])
				}
			}
			// and the reverse direction: the golden datagram decodes to the payload
			msg, err := mustDecoder(t, c).Decode(time.Unix(0, 0), tc.want[0])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(msg.Payload, tc.payload) {
				t.Errorf("decoded %x, want %x", msg.Payload, tc.payload)
			}
		})
	}
}

func mustPassword(t testing.TB, pw string) []byte {
	t.Helper()
	p, err := PasswordPayload(pw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGoldenLZ4Block decodes a block written by hand from the LZ4 block format: token 0x1f (1
// literal, match length 15+), literal 0x00, offset 0x0001 little-endian, length byte 0x2c (match
// 4+15+44 = 63 bytes), then token 0x50 and 5 final literals "ABCDE"; the reference appends 0xff.
// It yields 64 zero bytes then "ABCDE". Encoding the same frame must also pick the block (0xff).
func TestGoldenLZ4Block(t *testing.T) {
	c := mustCodec(t, Options{LZ4: 1})
	dgram := unhex(t, "1f0001002c504142434445ff")
	want := append(make([]byte, 64), "ABCDE"...)
	msg, err := mustDecoder(t, c).Decode(time.Unix(0, 0), dgram)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(msg.Payload, want) || !msg.Compressed || msg.Kind != KindFrame {
		t.Fatalf("decoded %x (compressed %v kind %v), want %x compressed frame", msg.Payload, msg.Compressed, msg.Kind, want)
	}
	enc, err := c.NewEncoder(0).Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	d := enc.Datagrams[0]
	if !enc.Compressed || d[len(d)-1] != FlagCompressed || len(d) >= len(want) {
		t.Fatalf("encoded %x: want a shorter LZ4 block flagged 0xff", d)
	}
}

// TestGoldenFragments: -mtu 1036 allows 1008-byte datagrams; a 1100-byte frame becomes
// "UDPFRG" 0000 + bytes 0..999 and "UDPFRG" 0001 + bytes 1000..1099; the next frame uses 0002/0003.
func TestGoldenFragments(t *testing.T) {
	c := mustCodec(t, Options{MTU: 1036})
	f := make([]byte, 1100)
	for i := range f {
		f[i] = byte(i)
	}
	e := c.NewEncoder(0)
	for _, seq := range []uint16{0, 2} {
		got, err := e.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Fragmented || len(got.Datagrams) != 2 {
			t.Fatalf("not fragmented: %+v", got)
		}
		w1 := append([]byte{'U', 'D', 'P', 'F', 'R', 'G', byte(seq >> 8), byte(seq)}, f[:1000]...)
		w2 := append([]byte{'U', 'D', 'P', 'F', 'R', 'G', byte(seq >> 8), byte(seq + 1)}, f[1000:]...)
		if !bytes.Equal(got.Datagrams[0], w1) || !bytes.Equal(got.Datagrams[1], w2) {
			t.Fatalf("seq %d: halves differ from the hand-built ones", seq)
		}
	}
	// 1008 bytes fit MTU 1036 exactly: no fragmentation.
	got, err := e.Encode(make([]byte, 1008))
	if err != nil || got.Fragmented {
		t.Fatalf("1008 bytes: fragmented=%v err=%v", got.Fragmented, err)
	}
	// 2000 bytes need fragmentation but exceed what UDPFRG carries: refused (the reference drops).
	_, err = e.Encode(make([]byte, 2000))
	if r, ok := ReasonOf(err); !ok || r != DropOversize {
		t.Fatalf("2000 bytes: err %v, want oversize", err)
	}
	// sequence numbers wrap modulo 65536 keeping even/odd pairs
	w := c.NewEncoder(65534)
	got, _ = w.Encode(f)
	got2, _ := w.Encode(f)
	if got.Datagrams[1][6] != 0xff || got.Datagrams[1][7] != 0xff || got2.Datagrams[0][7] != 0 || got2.Datagrams[0][6] != 0 {
		t.Fatalf("wrap: %x %x", got.Datagrams[1][:8], got2.Datagrams[0][:8])
	}
}

var allCiphers = []Cipher{CipherNone, CipherXOR, CipherAES128, CipherAES192, CipherAES256}

// payloads used by the option matrix: a small frame, a compressible one that needs
// fragmentation when uncompressed, and an incompressible one that needs fragmentation.
func matrixPayloads() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 1400)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	return map[string][]byte{
		"small":          frame([]byte("small frame body")),
		"compressible":   frame(bytes.Repeat([]byte("abcd"), 350)),
		"incompressible": frame(random),
	}
}

// TestOptionMatrix: every combination of LZ4 on/off × cipher × MTU off/1036 × payload, in both
// directions (two independent encoder/decoder pairs with the same options).
func TestOptionMatrix(t *testing.T) {
	for _, lz := range []int{0, 1} {
		for _, ci := range allCiphers {
			for _, mtu := range []int{0, 1036} {
				for name, p := range matrixPayloads() {
					t.Run(fmt.Sprintf("lz4=%d/%v/mtu=%d/%s", lz, ci, mtu, name), func(t *testing.T) {
						o := Options{LZ4: lz, Cipher: ci, Key: "a key of any length", MTU: mtu}
						a, b := mustCodec(t, o), mustCodec(t, o)
						for dir, pair := range [][2]*Codec{{a, b}, {b, a}} {
							got, err := pair[0].NewEncoder(0).Encode(p)
							if err != nil {
								t.Fatal(err)
							}
							wantFrag := mtu > 0 && name == "incompressible" || (mtu > 0 && name == "compressible" && lz == 0)
							if got.Fragmented != wantFrag {
								t.Fatalf("dir %d: fragmented=%v want %v", dir, got.Fragmented, wantFrag)
							}
							if got.Compressed != (lz > 0 && name == "compressible") {
								t.Fatalf("dir %d: compressed=%v", dir, got.Compressed)
							}
							for _, d := range got.Datagrams {
								if mtu > 0 && len(d) > mtu-UDPOverhead {
									t.Fatalf("datagram of %d bytes exceeds MTU-28", len(d))
								}
							}
							dec := mustDecoder(t, pair[1])
							var msg Message
							for _, d := range got.Datagrams {
								if msg, err = dec.Decode(time.Unix(100, 0), d); err != nil {
									t.Fatal(err)
								}
							}
							if !bytes.Equal(msg.Payload, p) || msg.Kind != KindFrame || msg.Reassembled != wantFrag || msg.Compressed != got.Compressed {
								t.Fatalf("dir %d: round trip: kind %v reassembled %v len %d", dir, msg.Kind, msg.Reassembled, len(msg.Payload))
							}
						}
					})
				}
			}
		}
	}
}

func TestReassemblyOrderAndStaleness(t *testing.T) {
	c := mustCodec(t, Options{MTU: 1036})
	e := c.NewEncoder(0)
	f := frame(bytes.Repeat([]byte{7}, 1200))
	enc, err := e.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)

	t.Run("second half first", func(t *testing.T) {
		d := mustDecoder(t, c)
		if m, err := d.Decode(t0, enc.Datagrams[1]); err != nil || m.Kind != KindHalf {
			t.Fatalf("second half: %v %v", m.Kind, err)
		}
		m, err := d.Decode(t0.Add(500*time.Millisecond), enc.Datagrams[0])
		if err != nil || !bytes.Equal(m.Payload, f) || !m.Reassembled {
			t.Fatalf("joined: %v reassembled=%v equal=%v", err, m.Reassembled, bytes.Equal(m.Payload, f))
		}
		if d.Pending() != 0 {
			t.Fatalf("pending %d after join", d.Pending())
		}
	})
	t.Run("stale half dropped", func(t *testing.T) {
		d := mustDecoder(t, c)
		if _, err := d.Decode(t0, enc.Datagrams[0]); err != nil {
			t.Fatal(err)
		}
		m, err := d.Decode(t0.Add(1500*time.Millisecond), enc.Datagrams[1])
		if err != nil || m.Kind != KindHalf || m.Stale != 1 {
			t.Fatalf("late pair: kind %v stale %d err %v; want a stored half and one stale", m.Kind, m.Stale, err)
		}
		// a fresh first half now pairs with the stored second half
		m, err = d.Decode(t0.Add(2*time.Second), enc.Datagrams[0])
		if err != nil || !bytes.Equal(m.Payload, f) {
			t.Fatalf("fresh pair: %v", err)
		}
	})
	t.Run("bounded pending", func(t *testing.T) {
		d, err := c.NewDecoder(time.Second, 4)
		if err != nil {
			t.Fatal(err)
		}
		stale := 0
		for i := range 10 {
			h := append([]byte("UDPFRG"), 0, byte(2*i))
			m, err := d.Decode(t0, append(h, 1, 2, 3))
			if err != nil {
				t.Fatal(err)
			}
			stale += m.Stale
		}
		if d.Pending() != 4 || stale != 6 {
			t.Fatalf("pending %d stale %d, want 4 and 6", d.Pending(), stale)
		}
	})
	t.Run("bad halves", func(t *testing.T) {
		d := mustDecoder(t, c)
		for _, tc := range []struct {
			dgram []byte
			want  DropReason
		}{
			{[]byte("UDPFRG\x00"), DropTruncated},
			{append([]byte("UDPFRG\x00\x00"), make([]byte, 1001)...), DropOversize},
		} {
			_, err := d.Decode(t0, tc.dgram)
			if r, ok := ReasonOf(err); !ok || r != tc.want {
				t.Errorf("%d bytes: %v, want %v", len(tc.dgram), err, tc.want)
			}
		}
	})
	t.Run("no MTU, no reassembly", func(t *testing.T) {
		// as in the reference, a receiver without -mtu treats UDPFRG datagrams as payloads
		d := mustDecoder(t, mustCodec(t, Options{}))
		m, err := d.Decode(t0, enc.Datagrams[0])
		if err != nil || m.Kind != KindFrame || m.Reassembled {
			t.Fatalf("kind %v err %v", m.Kind, err)
		}
	})
}

func TestDecodeRefusals(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, tc := range []struct {
		name  string
		opts  Options
		dgram []byte
		want  DropReason
	}{
		{"empty", Options{}, nil, DropTruncated},
		{"short frame", Options{}, []byte("short"), DropTruncated},
		{"oversize", Options{}, make([]byte, MaxDatagramSize+1), DropOversize},
		{"bad flag byte", Options{LZ4: 1}, append(frame(nil), 0x00), DropBadFlag},
		{"flag only", Options{LZ4: 1}, []byte{0xaa}, DropTruncated},
		{"bad lz4 block", Options{LZ4: 1}, []byte{0xf0, 0xff}, DropDecompress},
		{"aes length", Options{Cipher: CipherAES128}, make([]byte, 17), DropDecrypt},
		// a wrong key is caught only through the padding check (about 15 times in 16; this vector is)
		{"aes wrong key", Options{Cipher: CipherAES128, Key: "wrong"}, unhex(t, "b23a6737d89c2482ed6d578acd7668ab"), DropDecrypt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustDecoder(t, mustCodec(t, tc.opts)).Decode(t0, tc.dgram)
			if r, ok := ReasonOf(err); !ok || r != tc.want {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{{LZ4: -1}, {LZ4: 10}, {MTU: 1035}, {MTU: 1501}, {Cipher: 9}, {Key: "a\x00b"},
		{Key: string(make([]byte, MaxKeyLen+1))}} {
		if _, err := NewCodec(o, nil); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	var warnings []string
	c, err := NewCodec(Options{Cipher: CipherAES256}, func(m string) { warnings = append(warnings, m) })
	if err != nil || c.Options().Key != DefaultKey || len(warnings) != 2 {
		t.Fatalf("defaults: %+v %v warnings %q", c.Options(), err, warnings)
	}
	if _, err := ParseCipher("aes-512"); err == nil {
		t.Error("aes-512 accepted")
	}
	if ci, err := ParseCipher("aes-192"); err != nil || ci != CipherAES192 {
		t.Errorf("aes-192: %v %v", ci, err)
	}
}

func TestPasswordMatches(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    bool
	}{
		{"PASSWORD:secret\x00", true},
		{"PASSWORD:secret", true},
		{"PASSWORD:secret\x00junk", true},
		{"PASSWORD:secrets\x00", false},
		{"PASSWORD:secre\x00", false},
		{"PASSWORD:", false},
		{"PING:PING:", false},
	} {
		if got := PasswordMatches([]byte(tc.payload), "secret"); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.payload, got, tc.want)
		}
	}
	if _, err := PasswordPayload(""); err == nil {
		t.Error("empty password accepted")
	}
}

func TestMonitor(t *testing.T) {
	var m Monitor
	step := func(pong bool, wantUp bool) {
		t.Helper()
		if pong {
			m.Pong()
		}
		if up, _ := m.Tick(); up != wantUp {
			t.Fatalf("tick %d: up=%v want %v", m.Ticks(), up, wantUp)
		}
	}
	step(false, false) // 1: no PONG ever: stays down (the reference would say up here)
	step(false, false) // 2
	step(true, true)   // PONG at tick 2; tick 3 < 2+4: up
	step(false, true)  // 4
	step(false, true)  // 5
	step(false, true)  // 6
	step(false, true)  // 7 = 2+5: not yet more than 5
	step(false, false) // 8 > 2+5: down
	step(false, false) // 9
	step(true, true)   // PONG at tick 9; tick 10 < 9+4: up again
}
