package route

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// FuzzRouter builds a small graph from the fuzzer's bytes — any kinds, IDs that may be invalid
// or repeated, links between any nodes, metrics anywhere in and out of range — then changes
// links with more bytes. New and SetLink must refuse or accept without panicking; an accepted
// graph must give lookups whose cost equals Distance, and after every accepted change the router
// must equal a fresh New on the changed links.
func FuzzRouter(f *testing.F) {
	f.Add([]byte{3, 1, 2, 1, 0, 1, 9, 5, 1, 2, 9, 5, 0, 2, 3, 7, 0, 1, 1, 1})
	f.Add([]byte{6, 2, 2, 2, 1, 1, 1, 0, 1, 200, 3, 0, 2, 50, 50, 1, 3, 0, 0, 2, 4, 7, 7, 3, 5, 1, 2, 0, 1, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b
		}
		n := next() % 12
		var nodes []Node
		for i := range n {
			id := fmt.Sprintf("n%d", i)
			switch next() % 16 {
			case 0:
				id = "" // invalid
			case 1:
				id = "n0" // maybe a duplicate
			}
			nodes = append(nodes, Node{ID: id, Kind: Kind(next() % 3)})
		}
		metrics := func() Metrics {
			bw := []uint64{0, MinBandwidth - 1, MinBandwidth, 1e6, 1e9, MaxBandwidth, MaxBandwidth + 1}
			lat := []time.Duration{-1, 0, time.Millisecond, 130 * time.Millisecond, MaxLatency, MaxLatency + 1}
			return Metrics{Bandwidth: bw[next()%len(bw)], Latency: lat[next()%len(lat)]}
		}
		nodeID := func() string {
			if n == 0 {
				return "none"
			}
			return nodes[next()%n].ID
		}
		var links []Link
		for range next() % 30 {
			links = append(links, Link{A: nodeID(), B: nodeID(), Metrics: metrics()})
		}
		r, err := New(nodes, links)
		if err != nil {
			return
		}
		for range next() % 8 {
			i := next() % max(1, len(links))
			if len(links) == 0 {
				break
			}
			m := metrics()
			if _, err := r.SetLink(links[i].A, links[i].B, m); err != nil {
				continue
			}
			links[i].Metrics = m
		}
		full, err := New(nodes, links)
		if err != nil {
			t.Fatalf("the changed links were refused by New: %v", err)
		}
		if !slices.Equal(r.dist, full.dist) || !slices.Equal(r.next, full.next) || !slices.Equal(r.best, full.best) {
			t.Fatalf("incremental state differs from a full recompute")
		}
		for _, a := range nodes {
			for _, b := range nodes {
				p, err := r.Lookup(a.ID, b.ID)
				c, ok, derr := r.Distance(a.ID, b.ID)
				switch {
				case derr != nil:
					t.Fatalf("distance %s → %s: %v", a.ID, b.ID, derr)
				case !ok && !errors.Is(err, ErrNoRoute):
					t.Fatalf("%s → %s: no distance but lookup %v %v", a.ID, b.ID, p, err)
				case ok && (err != nil || p.Cost != c):
					t.Fatalf("%s → %s: distance %d but lookup %v %v", a.ID, b.ID, c, p, err)
				}
			}
			if _, err := r.Table(a.ID); err != nil {
				t.Fatalf("table of %s: %v", a.ID, err)
			}
		}
	})
}
