package route

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bounds on the inputs. Anything outside is refused by [New] and [Router.SetLink] with an error
// naming the object and the bound.
const (
	// MaxNodes bounds the number of nodes of one graph.
	MaxNodes = 200_000
	// MaxSupers bounds the number of super nodes (phase 1 is O(m³) time and O(m²) memory).
	MaxSupers = 2_000
	// MaxLinks bounds the number of links of one graph.
	MaxLinks = 4_000_000
	// MaxAttachments bounds the number of super nodes one ordinary node is linked to.
	MaxAttachments = 16
	// MaxPhase2Entries bounds ordinary nodes × super nodes: phase 2 keeps one byte per pair.
	MaxPhase2Entries = 200_000_000
	// MaxIDLen bounds the length of a node ID in bytes.
	MaxIDLen = 64

	// MinBandwidth and MaxBandwidth bound a link's measured bandwidth, in bits per second
	// (1 kbit/s to 1 Tbit/s).
	MinBandwidth = 1_000
	MaxBandwidth = 1_000_000_000_000
	// MaxLatency bounds a link's measured one-way latency.
	MaxLatency = 10 * time.Second

	// referenceBits is the burst whose delivery time the cost estimates: 1 Mbit (125 kB).
	referenceBits = 1_000_000
)

// Kind says whether a node relays.
type Kind uint8

const (
	// Ordinary nodes sit behind one carrier; they originate and terminate traffic, never relay.
	Ordinary Kind = iota + 1
	// Super nodes sit behind several carriers and relay between tunnels.
	Super
)

// String returns "ordinary", "super" or "kind(N)".
func (k Kind) String() string {
	switch k {
	case Ordinary:
		return "ordinary"
	case Super:
		return "super"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Node is one site of the overlay. ID is 1..[MaxIDLen] bytes of [A-Za-z0-9._-], unique.
type Node struct {
	ID   string
	Kind Kind
}

// Metrics are a link's measured properties. Bandwidth is in bits per second, within
// [MinBandwidth, MaxBandwidth]; Latency is one-way, within [0, MaxLatency].
type Metrics struct {
	Bandwidth uint64
	Latency   time.Duration
}

// Cost is a link or path cost: an estimate, in microseconds, of the time to deliver a 1 Mbit
// burst. Path costs are sums of link costs.
type Cost int64

// Validate reports why m is out of range, or nil.
func (m Metrics) Validate() error {
	if m.Bandwidth < MinBandwidth || m.Bandwidth > MaxBandwidth {
		return fmt.Errorf("bandwidth %d bit/s is outside [%d, %d] bit/s: report the measured rate in bits per second (a dead link is removed, not given bandwidth 0)",
			m.Bandwidth, uint64(MinBandwidth), uint64(MaxBandwidth))
	}
	if m.Latency < 0 || m.Latency > MaxLatency {
		return fmt.Errorf("latency %v is outside [0, %v]: report the measured one-way latency", m.Latency, MaxLatency)
	}
	return nil
}

// Cost returns the link's cost: latency in microseconds (rounded up) plus the time in
// microseconds to send a 1 Mbit burst at the measured bandwidth (rounded up). More bandwidth or
// less latency always gives a smaller or equal cost; every valid link costs at least 1 and at
// most about 1.01e9. It returns an error when m is invalid (see [Metrics.Validate]).
func (m Metrics) Cost() (Cost, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	lat := (m.Latency + time.Microsecond - 1) / time.Microsecond
	const bitsTimesMicro = referenceBits * 1_000_000 // 1e12: µs to send referenceBits at 1 bit/s
	tx := (bitsTimesMicro + m.Bandwidth - 1) / m.Bandwidth
	return Cost(int64(lat) + int64(tx)), nil
}

// Link is an undirected link between two nodes with its measured metrics. At least one end is
// a super node: ordinary nodes never talk directly.
type Link struct {
	A, B    string
	Metrics Metrics
}

// ref locates a node: supers are 0..m-1, ordinary nodes 0..k-1, each in ID order.
type ref struct {
	kind Kind
	idx  int32
}

// graph is the validated, indexed form of the input.
type graph struct {
	superIDs []string // sorted
	ordIDs   []string // sorted
	index    map[string]ref

	// super–super links: dense m×m cost matrix (inf when absent) and sorted neighbour lists
	w    []Cost
	nbrs [][]int32

	// ordinary attachments, sorted by super index: ordinary o's are att[attOff[o]:attOff[o+1]]
	attOff []int32
	att    []attachment

	// superOrd[s]: the ordinary nodes attached to super s, ascending
	superOrd [][]int32
}

// attachment is one ordinary–super link seen from the ordinary node.
type attachment struct {
	super int32
	cost  Cost
}

// inf marks "no path"; small enough that inf+inf and inf+any path cost do not overflow.
const inf Cost = 1 << 61

func validID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("node ID %.80q must be 1..%d bytes", id, MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("node ID %q has byte %q: use only A-Z a-z 0-9 . _ -", id, c)
		}
	}
	return nil
}

// newGraph validates nodes and links and indexes them.
func newGraph(nodes []Node, links []Link) (*graph, error) {
	if len(nodes) > MaxNodes {
		return nil, fmt.Errorf("%d nodes exceed the bound of %d", len(nodes), MaxNodes)
	}
	if len(links) > MaxLinks {
		return nil, fmt.Errorf("%d links exceed the bound of %d", len(links), MaxLinks)
	}
	g := &graph{index: make(map[string]ref, len(nodes))}
	for _, n := range nodes {
		if err := validID(n.ID); err != nil {
			return nil, err
		}
		if _, dup := g.index[n.ID]; dup {
			return nil, fmt.Errorf("node %q is listed twice: node IDs must be unique", n.ID)
		}
		switch n.Kind {
		case Super:
			g.superIDs = append(g.superIDs, n.ID)
		case Ordinary:
			g.ordIDs = append(g.ordIDs, n.ID)
		default:
			return nil, fmt.Errorf("node %q has kind %v: use route.Super or route.Ordinary", n.ID, n.Kind)
		}
		g.index[n.ID] = ref{} // placeholder for the duplicate check
	}
	if len(g.superIDs) > MaxSupers {
		return nil, fmt.Errorf("%d super nodes exceed the bound of %d", len(g.superIDs), MaxSupers)
	}
	if e := len(g.superIDs) * len(g.ordIDs); e > MaxPhase2Entries {
		return nil, fmt.Errorf("%d ordinary × %d super nodes = %d phase 2 entries exceed the bound of %d: split the fabric or use fewer super nodes",
			len(g.ordIDs), len(g.superIDs), e, MaxPhase2Entries)
	}
	slices.Sort(g.superIDs)
	slices.Sort(g.ordIDs)
	for i, id := range g.superIDs {
		g.index[id] = ref{Super, int32(i)}
	}
	for i, id := range g.ordIDs {
		g.index[id] = ref{Ordinary, int32(i)}
	}
	m, k := len(g.superIDs), len(g.ordIDs)
	g.w = make([]Cost, m*m)
	for i := range g.w {
		g.w[i] = inf
	}
	g.nbrs = make([][]int32, m)
	attCount := make([]int32, k)
	type ordLink struct {
		o int32
		a attachment
	}
	var ordLinks []ordLink
	for i, l := range links {
		ra, okA := g.index[l.A]
		rb, okB := g.index[l.B]
		name := fmt.Sprintf("link %d (%q–%q)", i, l.A, l.B)
		switch {
		case !okA:
			return nil, fmt.Errorf("%s: unknown node %q: add the node or drop the link", name, l.A)
		case !okB:
			return nil, fmt.Errorf("%s: unknown node %q: add the node or drop the link", name, l.B)
		case l.A == l.B:
			return nil, fmt.Errorf("%s joins a node to itself: drop it", name)
		case ra.kind == Ordinary && rb.kind == Ordinary:
			return nil, fmt.Errorf("%s joins two ordinary nodes: ordinary nodes never talk directly (seed 002), drop it or make one end a super node", name)
		}
		c, err := l.Metrics.Cost()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if ra.kind == Super && rb.kind == Super {
			if g.w[int(ra.idx)*m+int(rb.idx)] != inf {
				return nil, fmt.Errorf("%s is listed twice: give each pair of nodes one link", name)
			}
			g.w[int(ra.idx)*m+int(rb.idx)] = c
			g.w[int(rb.idx)*m+int(ra.idx)] = c
			g.nbrs[ra.idx] = append(g.nbrs[ra.idx], rb.idx)
			g.nbrs[rb.idx] = append(g.nbrs[rb.idx], ra.idx)
			continue
		}
		o, s := ra, rb
		if o.kind == Super {
			o, s = rb, ra
		}
		if attCount[o.idx] == MaxAttachments {
			return nil, fmt.Errorf("%s: ordinary node %q has more than %d super nodes: keep its best %d links",
				name, g.ordIDs[o.idx], MaxAttachments, MaxAttachments)
		}
		attCount[o.idx]++
		ordLinks = append(ordLinks, ordLink{o.idx, attachment{s.idx, c}})
	}
	for s := range g.nbrs {
		slices.Sort(g.nbrs[s])
	}
	g.attOff = make([]int32, k+1)
	for o, c := range attCount {
		g.attOff[o+1] = g.attOff[o] + c
	}
	g.att = make([]attachment, len(ordLinks))
	fill := slices.Clone(g.attOff[:k])
	for _, ol := range ordLinks {
		g.att[fill[ol.o]] = ol.a
		fill[ol.o]++
	}
	g.superOrd = make([][]int32, m)
	for o := range k {
		as := g.att[g.attOff[o]:g.attOff[o+1]]
		slices.SortFunc(as, func(x, y attachment) int { return int(x.super - y.super) })
		for i := 1; i < len(as); i++ {
			if as[i].super == as[i-1].super {
				return nil, fmt.Errorf("link %q–%q is listed twice: give each pair of nodes one link", g.ordIDs[o], g.superIDs[as[i].super])
			}
		}
		for _, a := range as {
			g.superOrd[a.super] = append(g.superOrd[a.super], int32(o))
		}
	}
	return g, nil
}

// errUnknown builds the error for an unknown node ID.
func errUnknown(id string) error {
	return fmt.Errorf("unknown node %.80q: %w", id, ErrUnknownNode)
}

// ErrUnknownNode is wrapped by errors about node IDs the router does not know.
var ErrUnknownNode = errors.New("not in the overlay graph")

// ErrNoRoute is wrapped by errors about destinations that cannot be reached.
var ErrNoRoute = errors.New("no route")

// quote joins IDs for error messages.
func quote(ids []string) string {
	return `"` + strings.Join(ids, `" → "`) + `"`
}
