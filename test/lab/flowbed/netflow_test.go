package flowbed

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
)

// v5Datagram builds a datagram with n records, record i from 10.0.0.1:(1000+i) to
// 10.0.1.1:2000, UDP, i+1 packets of 50 bytes.
func v5Datagram(n int) []byte {
	b := make([]byte, V5HeaderLen+n*V5RecordLen)
	binary.BigEndian.PutUint16(b, 5)
	binary.BigEndian.PutUint16(b[2:], uint16(n))
	binary.BigEndian.PutUint32(b[16:], 77)
	b[20], b[21] = 2, 9
	for i := range n {
		r := b[V5HeaderLen+i*V5RecordLen:]
		copy(r[0:], []byte{10, 0, 0, 1})
		copy(r[4:], []byte{10, 0, 1, 1})
		binary.BigEndian.PutUint16(r[12:], 1)
		binary.BigEndian.PutUint16(r[14:], 2)
		binary.BigEndian.PutUint32(r[16:], uint32(i+1))
		binary.BigEndian.PutUint32(r[20:], uint32(50*(i+1)))
		binary.BigEndian.PutUint16(r[32:], uint16(1000+i))
		binary.BigEndian.PutUint16(r[34:], 2000)
		r[38] = 17
	}
	return b
}

func TestDecodeV5(t *testing.T) {
	h, recs, err := DecodeV5(v5Datagram(30))
	if err != nil {
		t.Fatal(err)
	}
	if h.Count != 30 || h.FlowSequence != 77 || h.EngineType != 2 || h.EngineID != 9 || len(recs) != 30 {
		t.Fatalf("header %+v, %d records", h, len(recs))
	}
	r := recs[29]
	if r.Src != netip.MustParseAddrPort("10.0.0.1:1029") || r.Dst != netip.MustParseAddrPort("10.0.1.1:2000") ||
		r.Packets != 30 || r.Octets != 1500 || r.Proto != 17 || r.Input != 1 || r.Output != 2 {
		t.Errorf("record 29: %+v", r)
	}
}

func TestDecodeV5Rejects(t *testing.T) {
	good := v5Datagram(2)
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short", good[:10], "shorter"},
		{"version 9", append([]byte{0, 9}, good[2:]...), "version 9"},
		{"truncated", good[:len(good)-1], "does not match"},
		{"count 0", append(append([]byte{}, good[:2]...), append([]byte{0, 0}, good[4:V5HeaderLen]...)...), "count 0"},
		{"count 31", v5Datagram(31), "count 31"},
	} {
		if _, _, err := DecodeV5(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
