package route

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// shape describes a random seed-shaped graph: m supers, fully meshed with probability meshP per
// pair (1 = full mesh), k ordinary nodes each tied to 1..maxAtt supers (0..maxAtt when
// allowIsolated).
type shape struct {
	m, k          int
	meshP         float64
	maxAtt        int
	allowIsolated bool
}

func randMetrics(rng *rand.Rand) Metrics {
	// Bandwidths from 1 Mbit/s to 10 Gbit/s, latencies from 0 to 200 ms, a few coarse values so
	// that ties happen and the tie-break rules are exercised.
	bws := []uint64{1e6, 10e6, 100e6, 1e9, 10e9}
	return Metrics{
		Bandwidth: bws[rng.IntN(len(bws))],
		Latency:   time.Duration(rng.IntN(41)*5) * time.Millisecond,
	}
}

func randGraph(rng *rand.Rand, sh shape) ([]Node, []Link) {
	var nodes []Node
	var links []Link
	for i := range sh.m {
		nodes = append(nodes, Node{ID: fmt.Sprintf("s%03d", i), Kind: Super})
	}
	for i := range sh.k {
		nodes = append(nodes, Node{ID: fmt.Sprintf("o%05d", i), Kind: Ordinary})
	}
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	for i := range sh.m {
		for j := i + 1; j < sh.m; j++ {
			if rng.Float64() < sh.meshP {
				links = append(links, Link{A: fmt.Sprintf("s%03d", i), B: fmt.Sprintf("s%03d", j), Metrics: randMetrics(rng)})
			}
		}
	}
	for o := range sh.k {
		lo := 1
		if sh.allowIsolated {
			lo = 0
		}
		n := lo + rng.IntN(sh.maxAtt-lo+1)
		if n > sh.m {
			n = sh.m
		}
		for _, s := range rng.Perm(sh.m)[:n] {
			a, b := fmt.Sprintf("o%05d", o), fmt.Sprintf("s%03d", s)
			if rng.IntN(2) == 0 {
				a, b = b, a
			}
			links = append(links, Link{A: a, B: b, Metrics: randMetrics(rng)})
		}
	}
	rng.Shuffle(len(links), func(i, j int) { links[i], links[j] = links[j], links[i] })
	return nodes, links
}
