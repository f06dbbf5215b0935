package wg

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// FuzzParseState feeds arbitrary "get" answers to parseState: it never panics, and an answer
// it accepts says the same once written back in the protocol's form and parsed again (keys,
// endpoints, counters, handshake times, the listen port).
func FuzzParseState(f *testing.F) {
	key := strings.Repeat("ab", KeySize)
	f.Add("listen_port=51820\npublic_key=" + key + "\nendpoint=10.0.0.1:51820\nlast_handshake_time_sec=1700000000\nlast_handshake_time_nsec=5\ntx_bytes=10\nrx_bytes=20\nerrno=0\n")
	f.Add("public_key=" + key + "\nendpoint=[fd00::1]:1\npublic_key=" + strings.Repeat("00", KeySize) + "\nlast_handshake_time_sec=-1\n")
	f.Add("endpoint=1.2.3.4:5\n")
	f.Add("listen_port=70000\n")
	f.Add("public_key=abcd\n")
	f.Add("last_handshake_time_sec=1\nlast_handshake_time_nsec=-1000000000\npublic_key=" + key + "\nlast_handshake_time_sec=1\nlast_handshake_time_nsec=-1000000000\n")
	f.Fuzz(func(t *testing.T, text string) {
		port, peers, err := parseState(text)
		if err != nil {
			if port != 0 || peers != nil {
				t.Fatalf("refused %q but returned port %d, %d peers", text, port, len(peers))
			}
			return
		}
		if len(peers) > strings.Count(text, "public_key=") {
			t.Fatalf("%d peers from %d public_key lines", len(peers), strings.Count(text, "public_key="))
		}
		var b strings.Builder
		fmt.Fprintf(&b, "listen_port=%d\n", port)
		for _, p := range peers {
			fmt.Fprintf(&b, "public_key=%s\n", hex.EncodeToString(p.PublicKey[:]))
			if p.Endpoint.IsValid() {
				fmt.Fprintf(&b, "endpoint=%s\n", p.Endpoint)
			}
			if !p.LastHandshake.IsZero() {
				fmt.Fprintf(&b, "last_handshake_time_sec=%d\nlast_handshake_time_nsec=%d\n", p.LastHandshake.Unix(), p.LastHandshake.Nanosecond())
			}
			fmt.Fprintf(&b, "tx_bytes=%d\nrx_bytes=%d\n", p.TxBytes, p.RxBytes)
		}
		port2, peers2, err := parseState(b.String())
		if err != nil {
			t.Fatalf("the written-back form of %q is refused: %v\n%s", text, err, b.String())
		}
		if port2 != port || len(peers2) != len(peers) {
			t.Fatalf("round trip of %q: port %d→%d, %d→%d peers", text, port, port2, len(peers), len(peers2))
		}
		for k, p := range peers {
			q := peers2[k]
			// time.Unix(0, 0) is written back as sec=0,nsec=0, which means "no handshake".
			sameTime := p.LastHandshake.Equal(q.LastHandshake) || (q.LastHandshake.IsZero() && p.LastHandshake.Unix() == 0 && p.LastHandshake.Nanosecond() == 0)
			if p.PublicKey != q.PublicKey || p.Endpoint != q.Endpoint || p.TxBytes != q.TxBytes || p.RxBytes != q.RxBytes || !sameTime {
				t.Fatalf("round trip of %q, peer %d: %+v → %+v", text, k, p, q)
			}
		}
	})
}

// TestParseStateLongLine: a line longer than the scanner's buffer is refused, not taken as
// the end of the answer (the peers after it would be lost).
func TestParseStateLongLine(t *testing.T) {
	text := "public_key=" + strings.Repeat("ab", KeySize) + "\nx=" + strings.Repeat("y", 1<<17) + "\npublic_key=" + strings.Repeat("cd", KeySize) + "\n"
	if _, peers, err := parseState(text); err == nil {
		t.Fatalf("a %d-byte line is accepted (%d peers)", 1<<17, len(peers))
	}
}
