// Package policy chooses the send NIC of each stripe frame. The policies share one interface so
// that the engine, and the benchmark comparing them, switch with one configuration value:
//
//   - seed (KindSeed): the seed's algorithm. The Toeplitz hash of the flow tuple mod N names the
//     NIC; when that NIC's balance degree (stripe/load: its smoothed send load minus the mean of
//     the others') exceeds δ, the least-loaded NIC is chosen instead (an "adjust").
//   - round-robin (KindRoundRobin): NIC 0, 1, …, N−1, 0, … regardless of flow or load.
//   - hash (KindHash): the Toeplitz hash of the flow tuple mod N; a flow stays on one NIC, like a
//     bond's L3/L4 hash.
//   - weighted (KindWeighted): smooth weighted round-robin over the NICs' capacities: over every
//     Σcapacity consecutive choices, NIC i is chosen exactly capacity_i times, interleaved.
//
// Loads reach the policies through Observe, once per sampling period T (stripe/load.Tracker's
// TxLoads); only the seed policy uses them, the others only check them. Choose never fails and
// never blocks. A Policy is not safe for concurrent use: one send worker owns it.
package policy

import (
	"fmt"
	"math"

	"github.com/ovsplane/ovsplane/stripe/load"
	"github.com/ovsplane/ovsplane/stripe/toeplitz"
)

// Kind names a policy.
type Kind string

// The policies.
const (
	KindSeed       Kind = "seed"
	KindRoundRobin Kind = "round-robin"
	KindHash       Kind = "hash"
	KindWeighted   Kind = "weighted"
)

// Kinds lists every policy, in the order the documentation gives them.
func Kinds() []Kind { return []Kind{KindSeed, KindRoundRobin, KindHash, KindWeighted} }

// MaxNICs bounds Config.NICs.
const MaxNICs = toeplitz.MaxNICs

// MaxCapacity bounds each of Config.Capacities.
const MaxCapacity = 1 << 32

// Config selects and configures a policy.
type Config struct {
	// Kind is the policy; required.
	Kind Kind
	// NICs is the number of send NICs, 1..MaxNICs.
	NICs int
	// Hasher hashes flow tuples for KindSeed and KindHash; nil means the default Microsoft key.
	Hasher *toeplitz.Hasher
	// Delta is KindSeed's balance-degree threshold δ, finite and ≥ 0, in load-rate units (0.1:
	// ten points of Vmax above the other NICs' mean).
	Delta float64
	// Capacities are KindWeighted's per-NIC weights (for example Mbit/s), one per NIC, each
	// 1..MaxCapacity.
	Capacities []uint64
}

// Stats counts a policy's choices.
type Stats struct {
	Choices uint64   // frames chosen for
	Adjusts uint64   // KindSeed: choices moved off the hashed NIC
	PerNIC  []uint64 // choices per NIC
}

// Policy picks the send NIC of each frame.
type Policy interface {
	// Kind names the policy.
	Kind() Kind
	// NICs is the number of NICs choices range over.
	NICs() int
	// Observe takes the latest smoothed send load of every NIC (NICs() finite values ≥ 0). It
	// fails, keeping the previous loads, on a wrong count or value.
	Observe(loads []float64) error
	// Choose returns the NIC, in [0, NICs()), for the next frame of flow t.
	Choose(t toeplitz.Tuple) int
	// Stats returns the counters (a copy).
	Stats() Stats
}

// New validates cfg and builds the policy it names.
func New(cfg Config) (Policy, error) {
	if cfg.NICs < 1 || cfg.NICs > MaxNICs {
		return nil, fmt.Errorf("policy: %d NICs: want 1 to %d", cfg.NICs, MaxNICs)
	}
	h := cfg.Hasher
	if h == nil {
		var err error
		if h, err = toeplitz.New(nil); err != nil {
			return nil, fmt.Errorf("policy: default hasher: %w", err)
		}
	}
	c := counters{n: cfg.NICs, stats: Stats{PerNIC: make([]uint64, cfg.NICs)}}
	switch cfg.Kind {
	case KindSeed:
		if !(cfg.Delta >= 0) || math.IsInf(cfg.Delta, 1) {
			return nil, fmt.Errorf("policy: seed threshold δ %v: want a finite value ≥ 0 (for example 0.1)", cfg.Delta)
		}
		return &seed{counters: c, h: h, delta: cfg.Delta, over: make([]bool, cfg.NICs)}, nil
	case KindRoundRobin:
		return &roundRobin{counters: c}, nil
	case KindHash:
		return &hash{counters: c, h: h}, nil
	case KindWeighted:
		if len(cfg.Capacities) != cfg.NICs {
			return nil, fmt.Errorf("policy: weighted with %d capacities for %d NICs: give one capacity per NIC", len(cfg.Capacities), cfg.NICs)
		}
		w := &weighted{counters: c, weight: make([]int64, cfg.NICs), current: make([]int64, cfg.NICs)}
		for i, capa := range cfg.Capacities {
			if capa < 1 || capa > MaxCapacity {
				return nil, fmt.Errorf("policy: NIC %d capacity %d: want 1 to %d", i, capa, uint64(MaxCapacity))
			}
			w.weight[i] = int64(capa)
			w.total += int64(capa)
		}
		return w, nil
	case "":
		return nil, fmt.Errorf("policy: no kind: set one of %v", Kinds())
	}
	return nil, fmt.Errorf("policy: unknown kind %q: want one of %v", cfg.Kind, Kinds())
}

// counters is the bookkeeping every policy shares.
type counters struct {
	n     int
	stats Stats
}

func (c *counters) NICs() int { return c.n }

func (c *counters) Stats() Stats {
	s := c.stats
	s.PerNIC = append([]uint64(nil), s.PerNIC...)
	return s
}

// count records a choice and returns it.
func (c *counters) count(nic int) int {
	c.stats.Choices++
	c.stats.PerNIC[nic]++
	return nic
}

// check validates a load vector for n NICs.
func (c *counters) check(loads []float64) (least int, err error) {
	if len(loads) != c.n {
		return 0, fmt.Errorf("policy: %d loads observed for %d NICs", len(loads), c.n)
	}
	return load.LeastLoaded(loads)
}

type roundRobin struct {
	counters
	next int
}

func (*roundRobin) Kind() Kind { return KindRoundRobin }

func (p *roundRobin) Observe(loads []float64) error {
	_, err := p.check(loads)
	return err
}

func (p *roundRobin) Choose(toeplitz.Tuple) int {
	nic := p.next
	p.next = (p.next + 1) % p.n
	return p.count(nic)
}

type hash struct {
	counters
	h *toeplitz.Hasher
}

func (*hash) Kind() Kind { return KindHash }

func (p *hash) Observe(loads []float64) error {
	_, err := p.check(loads)
	return err
}

func (p *hash) Choose(t toeplitz.Tuple) int {
	return p.count(int(p.h.HashTuple(t) % uint32(p.n)))
}

type seed struct {
	counters
	h     *toeplitz.Hasher
	delta float64
	over  []bool // per NIC: balance degree > δ at the last Observe
	least int    // the least-loaded NIC at the last Observe
}

func (*seed) Kind() Kind { return KindSeed }

// Observe precomputes, per NIC, whether the adjust applies, so Choose stays O(1).
func (p *seed) Observe(loads []float64) error {
	least, err := p.check(loads)
	if err != nil {
		return err
	}
	over := make([]bool, p.n)
	for i := range loads {
		b, err := load.BalanceDegree(loads, i)
		if err != nil {
			return err
		}
		over[i] = b > p.delta
	}
	p.over, p.least = over, least
	return nil
}

func (p *seed) Choose(t toeplitz.Tuple) int {
	nic := int(p.h.HashTuple(t) % uint32(p.n))
	if p.over[nic] && p.least != nic {
		p.stats.Adjusts++
		nic = p.least
	}
	return p.count(nic)
}

type weighted struct {
	counters
	weight, current []int64
	total           int64
}

func (*weighted) Kind() Kind { return KindWeighted }

func (p *weighted) Observe(loads []float64) error {
	_, err := p.check(loads)
	return err
}

// Choose is smooth weighted round-robin: every NIC earns its weight, the richest (lowest index
// among equals) is chosen and pays the total.
func (p *weighted) Choose(toeplitz.Tuple) int {
	best := 0
	for i := range p.current {
		p.current[i] += p.weight[i]
		if p.current[i] > p.current[best] {
			best = i
		}
	}
	p.current[best] -= p.total
	return p.count(best)
}
