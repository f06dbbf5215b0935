//go:build linux

package overlaybed

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/test/lab"
)

// Drops counts datagrams lost on the underlay, to tell where TCP's retransmissions come from.
type Drops struct {
	// Relay counts the relays' own drops (loss draws, full queues, failed sends).
	Relay uint64
	// EdgeRcvbuf counts Udp RcvbufErrors in the edge namespaces: datagrams the kernel dropped
	// because a relay socket's receive buffer was full (the relay did not read fast enough).
	EdgeRcvbuf int64
}

// Sub returns d minus e.
func (d Drops) Sub(e Drops) Drops {
	return Drops{Relay: d.Relay - e.Relay, EdgeRcvbuf: d.EdgeRcvbuf - e.EdgeRcvbuf}
}

// Drops reads the bed's drop counters.
func (b *Bed) Drops(ctx context.Context) (Drops, error) {
	var d Drops
	for _, p := range b.Paths() {
		d.Relay += p.Dropped()
	}
	for _, s := range b.Sites {
		n, err := snmpCounter(ctx, s.Edge, "Udp", "RcvbufErrors")
		if err != nil {
			return d, err
		}
		d.EdgeRcvbuf += n
	}
	return d, nil
}

// snmpCounter reads one counter of /proc/net/snmp in ns (pairs of lines "Proto: names…" and
// "Proto: values…").
func snmpCounter(ctx context.Context, ns *lab.Netns, proto, name string) (int64, error) {
	out, err := ns.Exec(ctx, "cat", "/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	if len(out) > 1<<20 {
		return 0, fmt.Errorf("/proc/net/snmp in %s: %d bytes, more than 1 MiB", ns, len(out))
	}
	var header []string
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		for i, h := range header {
			if h == name && i < len(f) {
				return strconv.ParseInt(f[i], 10, 64)
			}
		}
		break
	}
	return 0, fmt.Errorf("/proc/net/snmp in %s: no %s %s", ns, proto, name)
}
