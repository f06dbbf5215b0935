package discovery

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"
)

// Bounds and defaults of Config.
const (
	DefaultMaxNodes = 1024
	DefaultMaxNICs  = 64
	MaxMaxNodes     = 1 << 16
	MaxMaxNICs      = MaxLinks * 4
	DefaultTTL      = 3 * time.Second
	MaxTTL          = time.Hour
)

// Config configures a Table.
type Config struct {
	// Self is this node's id (≥ 1); hellos from it are refused (a loop, or a duplicate node id).
	Self uint32
	// TTL is how long a NIC stays in the table after it was last heard: 0 means DefaultTTL,
	// otherwise up to MaxTTL. Make it a few hello intervals.
	TTL time.Duration
	// MaxNodes bounds the nodes (0: DefaultMaxNodes; at most MaxMaxNodes).
	MaxNodes int
	// MaxNICs bounds the NICs of one node (0: DefaultMaxNICs; at most MaxMaxNICs).
	MaxNICs int
	// LocalLinks is the number of this node's links (1..MaxLinks); Learn refuses other indexes.
	LocalLinks int
}

// NIC is one NIC of a node as heard by this node.
type NIC struct {
	Link     int              // the node's link index, from its hello
	MAC      net.HardwareAddr // the NIC's MAC
	Via      int              // the local link it was heard on
	LastSeen time.Time        // when it was last heard
	Expires  time.Time        // LastSeen + TTL
}

// Node is one node's NICs, sorted by local link, then the node's link index, then MAC.
type Node struct {
	ID   uint32
	NICs []NIC
}

// Stats counts what the table did with hellos.
type Stats struct {
	Learned   uint64 // hellos that added a NIC
	Refreshed uint64 // hellos that refreshed a known NIC
	Expired   uint64 // NICs dropped because their TTL passed
	Refused   uint64 // hellos refused: from this node, a bad local link, or beyond a bound
	Nodes     int    // nodes now
	NICs      int    // NICs now
}

type nicKey struct {
	via int
	mac [6]byte
}

// Table is the node-id → NICs table. It is safe for concurrent use.
type Table struct {
	cfg   Config
	mu    sync.Mutex
	nodes map[uint32]map[nicKey]*NIC
	stats Stats
}

// NewTable validates cfg and returns an empty table.
func NewTable(cfg Config) (*Table, error) {
	if cfg.Self == 0 {
		return nil, fmt.Errorf("discovery: this node's id is 0: node ids start at 1")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.TTL < 0 || cfg.TTL > MaxTTL {
		return nil, fmt.Errorf("discovery: TTL %v: want more than 0 and at most %v", cfg.TTL, MaxTTL)
	}
	if cfg.MaxNodes == 0 {
		cfg.MaxNodes = DefaultMaxNodes
	}
	if cfg.MaxNodes < 1 || cfg.MaxNodes > MaxMaxNodes {
		return nil, fmt.Errorf("discovery: at most %d nodes: want 1 to %d", cfg.MaxNodes, MaxMaxNodes)
	}
	if cfg.MaxNICs == 0 {
		cfg.MaxNICs = DefaultMaxNICs
	}
	if cfg.MaxNICs < 1 || cfg.MaxNICs > MaxMaxNICs {
		return nil, fmt.Errorf("discovery: at most %d NICs per node: want 1 to %d", cfg.MaxNICs, MaxMaxNICs)
	}
	if cfg.LocalLinks < 1 || cfg.LocalLinks > MaxLinks {
		return nil, fmt.Errorf("discovery: %d local links: want 1 to %d", cfg.LocalLinks, MaxLinks)
	}
	return &Table{cfg: cfg, nodes: map[uint32]map[nicKey]*NIC{}}, nil
}

// Learn records hello h, heard at now on local link via from Ethernet source src. It fails,
// counting the hello refused and changing nothing, when h comes from this node, via is not a
// local link, src differs from the MAC the hello names (a forged or relayed hello), or the node
// or NIC bound is reached even after expired entries were dropped.
func (t *Table) Learn(now time.Time, via int, src net.HardwareAddr, h Hello) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	refuse := func(format string, a ...any) error {
		t.stats.Refused++
		return fmt.Errorf("discovery: "+format, a...)
	}
	switch {
	case h.Node == t.cfg.Self:
		return refuse("hello from node %d on link %d, which is this node's own id: a loop, or two nodes share the id", h.Node, via)
	case h.Node == 0:
		return refuse("hello from node 0 on link %d", via)
	case via < 0 || via >= t.cfg.LocalLinks:
		return refuse("hello heard on local link %d: this node has links 0 to %d", via, t.cfg.LocalLinks-1)
	case len(h.MAC) != 6 || !bytes.Equal(src, h.MAC):
		return refuse("hello from node %d names MAC %v but came from %v: dropped as forged", h.Node, h.MAC, src)
	}
	key := nicKey{via: via}
	copy(key.mac[:], h.MAC)
	nics := t.nodes[h.Node]
	if nics == nil {
		if len(t.nodes) >= t.cfg.MaxNodes {
			t.expireLocked(now)
		}
		if len(t.nodes) >= t.cfg.MaxNodes {
			return refuse("hello from node %d: the table holds its maximum of %d nodes", h.Node, t.cfg.MaxNodes)
		}
		nics = map[nicKey]*NIC{}
		t.nodes[h.Node] = nics
	}
	if n := nics[key]; n != nil {
		n.Link, n.LastSeen, n.Expires = h.Link, now, now.Add(t.cfg.TTL)
		t.stats.Refreshed++
		return nil
	}
	if len(nics) >= t.cfg.MaxNICs {
		t.expireLocked(now)
		if t.nodes[h.Node] == nil { // everything of the node expired
			t.nodes[h.Node] = nics
		}
	}
	if len(nics) >= t.cfg.MaxNICs {
		return refuse("hello from node %d MAC %v: the node already has the maximum of %d NICs", h.Node, h.MAC, t.cfg.MaxNICs)
	}
	nics[key] = &NIC{Link: h.Link, MAC: append(net.HardwareAddr(nil), h.MAC...), Via: via, LastSeen: now, Expires: now.Add(t.cfg.TTL)}
	t.stats.Learned++
	return nil
}

// Expire drops the NICs whose TTL passed at now, and the nodes left without NICs.
func (t *Table) Expire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(now)
}

func (t *Table) expireLocked(now time.Time) {
	for id, nics := range t.nodes {
		for k, n := range nics {
			if !now.Before(n.Expires) {
				delete(nics, k)
				t.stats.Expired++
			}
		}
		if len(nics) == 0 {
			delete(t.nodes, id)
		}
	}
}

// MACs returns the unexpired MACs of node's NICs heard on local link via at now, sorted.
func (t *Table) MACs(now time.Time, node uint32, via int) []net.HardwareAddr {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []net.HardwareAddr
	for k, n := range t.nodes[node] {
		if k.via == via && now.Before(n.Expires) {
			out = append(out, append(net.HardwareAddr(nil), n.MAC...))
		}
	}
	slices.SortFunc(out, func(a, b net.HardwareAddr) int { return bytes.Compare(a, b) })
	return out
}

// Snapshot returns the unexpired nodes at now, sorted by id, each with its NICs sorted by local
// link, link index and MAC. The result is a copy.
func (t *Table) Snapshot(now time.Time) []Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Node
	for id, nics := range t.nodes {
		node := Node{ID: id}
		for _, n := range nics {
			if now.Before(n.Expires) {
				c := *n
				c.MAC = append(net.HardwareAddr(nil), n.MAC...)
				node.NICs = append(node.NICs, c)
			}
		}
		if len(node.NICs) == 0 {
			continue
		}
		slices.SortFunc(node.NICs, func(a, b NIC) int {
			if a.Via != b.Via {
				return a.Via - b.Via
			}
			if a.Link != b.Link {
				return a.Link - b.Link
			}
			return bytes.Compare(a.MAC, b.MAC)
		})
		out = append(out, node)
	}
	slices.SortFunc(out, func(a, b Node) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// Stats returns the counters and the current sizes (expired entries not yet dropped included).
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.Nodes = len(t.nodes)
	for _, nics := range t.nodes {
		s.NICs += len(nics)
	}
	return s
}
