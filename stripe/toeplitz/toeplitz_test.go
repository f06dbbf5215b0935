package toeplitz

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// vectors is the Microsoft/Intel RSS verification table (reference striping-overlay-flows.md
// §1.2), default key.
var vectors = []struct {
	name           string
	src, dst       string
	ipOnly, withL4 uint32
}{
	{"v4-1", "66.9.149.187:2794", "161.142.100.80:1766", 0x323e8fc2, 0x51ccc178},
	{"v4-2", "199.92.111.2:14230", "65.69.140.83:4739", 0xd718262a, 0xc626b0ea},
	{"v4-3", "24.19.198.95:12898", "12.22.207.184:38024", 0xd2d0a5de, 0x5c2b394a},
	{"v4-4", "38.27.205.30:48228", "209.142.163.6:2217", 0x82989176, 0xafc7327f},
	{"v4-5", "153.39.163.191:44251", "202.188.127.2:1303", 0x5d1809c5, 0x10e828a2},
	{"v6-1", "[3ffe:2501:200:1fff::7]:2794", "[3ffe:2501:200:3::1]:1766", 0x2cc18cd5, 0x40207d3d},
	{"v6-2", "[3ffe:501:8::260:97ff:fe40:efab]:14230", "[ff02::1]:4739", 0x0f0c461c, 0xdde51bbf},
	{"v6-3", "[3ffe:1900:4545:3:200:f8ff:fe21:67cf]:44251", "[fe80::200:f8ff:fe21:67cf]:38024", 0x4b61e985, 0x02d1feef},
}

// naive is an independent bit-by-bit Toeplitz: shift the key left one bit per input bit.
func naive(key, input []byte) uint32 {
	var result uint32
	window := uint32(key[0])<<24 | uint32(key[1])<<16 | uint32(key[2])<<8 | uint32(key[3])
	next := 32 // index of the next key bit to shift in
	for _, b := range input {
		for bit := 7; bit >= 0; bit-- {
			if b>>bit&1 == 1 {
				result ^= window
			}
			var in uint32
			if next < 8*len(key) {
				in = uint32(key[next/8] >> (7 - next%8) & 1)
			}
			window = window<<1 | in
			next++
		}
	}
	return result
}

func TestVerificationTable(t *testing.T) {
	h, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Key()); got != microsoftKeyHex {
		t.Fatalf("default key %s, want the Microsoft key", got)
	}
	for _, v := range vectors {
		src, dst := netip.MustParseAddrPort(v.src), netip.MustParseAddrPort(v.dst)
		in, err := AddrInput(src.Addr(), dst.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if got, err := h.Hash(in); err != nil || got != v.ipOnly {
			t.Errorf("%s IP-only: %#08x, %v; want %#08x", v.name, got, err, v.ipOnly)
		}
		in4, err := AddrPortInput(src, dst)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := h.Hash(in4); err != nil || got != v.withL4 {
			t.Errorf("%s IP+L4: %#08x, %v; want %#08x", v.name, got, err, v.withL4)
		}
		if got := naive(h.Key(), in4); got != v.withL4 {
			t.Errorf("%s IP+L4 by the naive implementation: %#08x, want %#08x", v.name, got, v.withL4)
		}
		wantLen := 12
		if src.Addr().Is6() {
			wantLen = 36
		}
		if len(in4) != wantLen {
			t.Errorf("%s input %d bytes, want %d", v.name, len(in4), wantLen)
		}
	}
}

// TestDerivedIndexes checks the reference's derived port-choice values: mod 4 of the IPv4
// 4-tuple and 2-tuple hashes, and the RETA-128 index (& 0x7f) of the 4-tuple hashes.
func TestDerivedIndexes(t *testing.T) {
	mod4L4 := []int{0, 2, 2, 3, 2}
	mod4IP := []int{2, 2, 2, 2, 1}
	reta := []uint32{120, 106, 74, 127, 34}
	for i, v := range vectors[:5] {
		if got, err := Index(v.withL4, 4); err != nil || got != mod4L4[i] {
			t.Errorf("%s L4 mod 4 = %d, %v; want %d", v.name, got, err, mod4L4[i])
		}
		if got, err := Index(v.ipOnly, 4); err != nil || got != mod4IP[i] {
			t.Errorf("%s IP mod 4 = %d, %v; want %d", v.name, got, err, mod4IP[i])
		}
		if got := v.withL4 & 0x7f; got != reta[i] {
			t.Errorf("%s RETA-128 index %d, want %d", v.name, got, reta[i])
		}
	}
}

func TestLinearAndSymmetric(t *testing.T) {
	h, _ := New(nil)
	sym, err := New(SymmetricKey())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Hash(make([]byte, 36)); got != 0 {
		t.Errorf("H(0…0) = %#x, want 0", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		x, y, z := make([]byte, 12), make([]byte, 12), make([]byte, 12)
		for i := range x {
			x[i], y[i] = byte(r.Uint32()), byte(r.Uint32())
			z[i] = x[i] ^ y[i]
		}
		hx, _ := h.Hash(x)
		hy, _ := h.Hash(y)
		hz, _ := h.Hash(z)
		if hz != hx^hy {
			t.Fatalf("H(x^y) = %#x, H(x)^H(y) = %#x for x=%x y=%x", hz, hx^hy, x, y)
		}
		// (src, dst, sport, dport) and (dst, src, dport, sport) under the symmetric key.
		sw := append(append(append(append([]byte{}, x[4:8]...), x[0:4]...), x[10:12]...), x[8:10]...)
		a, _ := sym.Hash(x)
		b, _ := sym.Hash(sw)
		if a != b {
			t.Fatalf("symmetric key: H(%x) = %#x, H(%x) = %#x", x, a, sw, b)
		}
		if n := naive(h.key, x); n != hx {
			t.Fatalf("fast %#x != naive %#x for %x", hx, n, x)
		}
	}
}

func TestBounds(t *testing.T) {
	for _, n := range []int{0, 1, 39, 257} {
		if _, err := New(make([]byte, n)); n != 0 && err == nil {
			t.Errorf("New(%d-byte key) accepted", n)
		}
	}
	k := bytes.Repeat([]byte{0xa5}, 52)
	h, err := New(k)
	if err != nil {
		t.Fatalf("52-byte key: %v", err)
	}
	k[0] = 0 // New copied the key
	if h.Key()[0] != 0xa5 {
		t.Error("New kept a reference to the caller's key")
	}
	if _, err := h.Hash(make([]byte, 48)); err != nil {
		t.Errorf("48 bytes with a 52-byte key: %v", err)
	}
	if _, err := h.Hash(make([]byte, 49)); err == nil {
		t.Error("49 bytes with a 52-byte key accepted")
	}
	if _, err := AddrInput(netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("::1")); err == nil {
		t.Error("mixed families accepted")
	}
	if _, err := AddrInput(netip.Addr{}, netip.MustParseAddr("::1")); err == nil {
		t.Error("zero address accepted")
	}
	for _, n := range []int{0, -1, MaxNICs + 1} {
		if _, err := Index(7, n); err == nil {
			t.Errorf("Index(7, %d) accepted", n)
		}
	}
	if got, err := Index(7, MaxNICs); err != nil || got != 7 {
		t.Errorf("Index(7, %d) = %d, %v", MaxNICs, got, err)
	}
}

func TestTupleLayout(t *testing.T) {
	tu := Tuple{Service: 0x0102, SrcNode: 0x03040506, DstNode: 0x0708090a, SrcPort: 0x0b0c, DstPort: 0x0d0e}
	b := tu.Bytes()
	want, _ := hex.DecodeString("0102030405060708090a0b0c0d0e")
	if !bytes.Equal(b[:], want) {
		t.Fatalf("tuple bytes %x, want %x", b, want)
	}
	h, _ := New(nil)
	direct, _ := h.Hash(want)
	if got := h.HashTuple(tu); got != direct || got != naive(h.key, want) {
		t.Errorf("HashTuple = %#x, Hash(bytes) = %#x, naive %#x", got, direct, naive(h.key, want))
	}
	// Each field takes part: changing any one changes the hash (for this tuple and key).
	for i, v := range []Tuple{
		{Service: 1, SrcNode: tu.SrcNode, DstNode: tu.DstNode, SrcPort: tu.SrcPort, DstPort: tu.DstPort},
		{Service: tu.Service, SrcNode: 1, DstNode: tu.DstNode, SrcPort: tu.SrcPort, DstPort: tu.DstPort},
		{Service: tu.Service, SrcNode: tu.SrcNode, DstNode: 1, SrcPort: tu.SrcPort, DstPort: tu.DstPort},
		{Service: tu.Service, SrcNode: tu.SrcNode, DstNode: tu.DstNode, SrcPort: 1, DstPort: tu.DstPort},
		{Service: tu.Service, SrcNode: tu.SrcNode, DstNode: tu.DstNode, SrcPort: tu.SrcPort, DstPort: 1},
	} {
		if h.HashTuple(v) == direct {
			t.Errorf("field %d does not change the hash", i)
		}
	}
}

// FuzzHash compares the table-free fast path with the naive shift-register implementation.
func FuzzHash(f *testing.F) {
	f.Add([]byte{66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6}, []byte(nil))
	f.Add(make([]byte, 36), SymmetricKey())
	f.Fuzz(func(t *testing.T, input, key []byte) {
		h, err := New(key)
		if err != nil {
			return
		}
		got, err := h.Hash(input)
		if len(input) > h.MaxInputLen() {
			if err == nil {
				t.Fatalf("%d-byte input accepted with a %d-byte key", len(input), len(h.key))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := naive(h.key, input); got != want {
			t.Fatalf("Hash = %#x, naive = %#x", got, want)
		}
	})
}
