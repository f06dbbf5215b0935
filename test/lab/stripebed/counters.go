//go:build linux

package stripebed

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/test/lab"
)

// maxProcFile bounds what is read of one /proc file.
const maxProcFile = 1 << 20

// readProc reads a file of /proc/thread-self/net inside ns (the thread's own network
// namespace is what it shows).
func readProc(ns *lab.Netns, name string) ([]byte, error) {
	var data []byte
	err := ns.Do(func() error {
		f, err := os.Open("/proc/thread-self/net/" + name)
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, maxProcFile+1)
		n := 0
		for n < len(buf) {
			k, err := f.Read(buf[n:])
			n += k
			if err != nil || k == 0 {
				break
			}
		}
		if n > maxProcFile {
			return fmt.Errorf("/proc/net/%s is larger than %d bytes", name, maxProcFile)
		}
		data = buf[:n]
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read /proc/net/%s in %s: %w", name, ns, err)
	}
	return data, nil
}

// TCPRetransSegs returns the namespace's TcpRetransSegs counter (/proc/net/snmp): every TCP
// segment retransmitted, MPTCP subflows included.
func TCPRetransSegs(ns *lab.Netns) (int64, error) {
	data, err := readProc(ns, "snmp")
	if err != nil {
		return 0, err
	}
	v, err := snmpValue(data, "Tcp", "RetransSegs")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ns, err)
	}
	return v, nil
}

// snmpValue finds a counter in /proc/net/snmp's format: pairs of lines "Proto: names…" and
// "Proto: values…".
func snmpValue(data []byte, proto, name string) (int64, error) {
	var header []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != proto+":" {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		for i, h := range header {
			if h == name && i < len(fields) {
				v, err := strconv.ParseInt(fields[i], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("snmp %s %s: %w", proto, name, err)
				}
				return v, nil
			}
		}
		break
	}
	return 0, fmt.Errorf("snmp: no counter %s %s", proto, name)
}

// IfBytes are an interface's byte counters.
type IfBytes struct {
	RX, TX int64
}

// InterfaceBytes returns the byte counters of every interface of the namespace (/proc/net/dev).
func InterfaceBytes(ns *lab.Netns) (map[string]IfBytes, error) {
	data, err := readProc(ns, "dev")
	if err != nil {
		return nil, err
	}
	m, err := parseNetDev(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ns, err)
	}
	return m, nil
}

// parseNetDev parses /proc/net/dev: two header lines, then "name: rx_bytes packets … (8 rx
// fields) tx_bytes …".
func parseNetDev(data []byte) (map[string]IfBytes, error) {
	m := map[string]IfBytes{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			continue // a header line
		}
		rx, err1 := strconv.ParseInt(f[0], 10, 64)
		tx, err2 := strconv.ParseInt(f[8], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/net/dev: interface %s: bad counters", strings.TrimSpace(name))
		}
		m[strings.TrimSpace(name)] = IfBytes{RX: rx, TX: tx}
	}
	return m, nil
}

// Snapshot is the counters of a bed at one moment.
type Snapshot struct {
	// RetransA and RetransB are TcpRetransSegs in A and B.
	RetransA, RetransB int64
	// LinkA and LinkB are the byte counters of each link's A and B end, in link order.
	LinkA, LinkB []IfBytes
}

// Snapshot reads the bed's counters.
func (b *Bed) Snapshot() (Snapshot, error) {
	var s Snapshot
	var err error
	if s.RetransA, err = TCPRetransSegs(b.A); err != nil {
		return s, err
	}
	if s.RetransB, err = TCPRetransSegs(b.B); err != nil {
		return s, err
	}
	ma, err := InterfaceBytes(b.A)
	if err != nil {
		return s, err
	}
	mb, err := InterfaceBytes(b.B)
	if err != nil {
		return s, err
	}
	for _, l := range b.Links {
		a, okA := ma[l.A.Name]
		bb, okB := mb[l.B.Name]
		if !okA || !okB {
			return s, fmt.Errorf("link %d: interface %s or %s is gone", l.Index, l.A.Name, l.B.Name)
		}
		s.LinkA, s.LinkB = append(s.LinkA, a), append(s.LinkB, bb)
	}
	return s, nil
}

// Delta is the change of the counters between two snapshots.
type Delta struct {
	// RetransA and RetransB are the TCP segments A and B retransmitted.
	RetransA, RetransB int64
	// LinkAB is the bytes each link carried from A to B (A end's TX), LinkBA from B to A.
	LinkAB, LinkBA []int64
}

// Sub returns the counters' change from before to s.
func (s Snapshot) Sub(before Snapshot) Delta {
	d := Delta{RetransA: s.RetransA - before.RetransA, RetransB: s.RetransB - before.RetransB}
	for i := range min(len(s.LinkA), len(before.LinkA)) {
		d.LinkAB = append(d.LinkAB, s.LinkA[i].TX-before.LinkA[i].TX)
		d.LinkBA = append(d.LinkBA, s.LinkB[i].TX-before.LinkB[i].TX)
	}
	return d
}

// SetSysctl writes value to /proc/sys/<key with dots as slashes> in ns (network sysctls are
// per namespace: a thread inside ns sees ns's). key must be a net.* sysctl.
func SetSysctl(ns *lab.Netns, key, value string) error {
	if !strings.HasPrefix(key, "net.") || strings.Contains(key, "/") || strings.Contains(key, "..") || len(key) > 128 {
		return fmt.Errorf("sysctl %q: want a net.* key of at most 128 characters without slashes", key)
	}
	err := ns.Do(func() error {
		return os.WriteFile("/proc/sys/"+strings.ReplaceAll(key, ".", "/"), []byte(value), 0)
	})
	if err != nil {
		return fmt.Errorf("sysctl %s=%s in %s: %w", key, value, ns, err)
	}
	return nil
}
