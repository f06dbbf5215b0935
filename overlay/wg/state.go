package wg

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// PeerStats is a snapshot of one peer's state.
type PeerStats struct {
	// PublicKey identifies the peer.
	PublicKey Key
	// Endpoint is the peer's current underlay address (configured or learned); zero when
	// unknown.
	Endpoint netip.AddrPort
	// LastHandshake is the time of the last completed handshake; zero before the first.
	LastHandshake time.Time
	// TxBytes and RxBytes count the bytes of WireGuard packets sent to and received from the
	// peer (encrypted, so they include WireGuard's overhead).
	TxBytes, RxBytes uint64
}

// parseState parses the "get" answer of WireGuard's configuration protocol.
func parseState(text string) (uint16, []PeerStats, error) {
	var port uint16
	var peers []PeerStats
	var sec, nsec int64
	flush := func() {
		if n := len(peers); n > 0 && (sec != 0 || nsec != 0) {
			peers[n-1].LastHandshake = time.Unix(sec, nsec)
		}
		sec, nsec = 0, 0
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		var err error
		if len(peers) == 0 && (k == "endpoint" || k == "tx_bytes" || k == "rx_bytes") {
			return 0, nil, fmt.Errorf("state line %q: %s before any public_key", sc.Text(), k)
		}
		switch k {
		case "listen_port":
			var p uint64
			p, err = strconv.ParseUint(v, 10, 16)
			port = uint16(p)
		case "public_key":
			flush()
			var b []byte
			b, err = hex.DecodeString(v)
			if err == nil && len(b) != KeySize {
				err = errors.New("bad key length")
			}
			var key Key
			copy(key[:], b)
			peers = append(peers, PeerStats{PublicKey: key})
		case "endpoint":
			peers[len(peers)-1].Endpoint, err = netip.ParseAddrPort(v)
		case "last_handshake_time_sec":
			sec, err = strconv.ParseInt(v, 10, 64)
		case "last_handshake_time_nsec":
			nsec, err = strconv.ParseInt(v, 10, 64)
		case "tx_bytes":
			peers[len(peers)-1].TxBytes, err = strconv.ParseUint(v, 10, 64)
		case "rx_bytes":
			peers[len(peers)-1].RxBytes, err = strconv.ParseUint(v, 10, 64)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("state line %q: %w", sc.Text(), err)
		}
	}
	if err := sc.Err(); err != nil {
		// A line longer than the scanner's buffer stops it: the rest would be lost silently.
		return 0, nil, fmt.Errorf("state: %w", err)
	}
	flush()
	return port, peers, nil
}
