//go:build linux

package overlayroute

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/ovsplane/ovsplane/overlay/route"
)

// armEnv names the arm a child process runs: "<arm>:<nodes>:<supers>".
const armEnv = "OVERLAY_ROUTE_ARM"

// result is what a child reports on a line starting with resultPrefix.
type result struct {
	Seconds      float64 // the computation measured (see each arm)
	AllocMB      float64 // bytes allocated by it (runtime TotalAlloc delta)
	RetainedMB   float64 // live heap after it and a GC, minus the input's
	TablesSec    float64 // route arm: materialising every node's Table, one at a time (≤ 10k)
	IncrSuperMs  float64 // incr arm: mean SetLink time of a super–super change
	IncrOrdMs    float64 // incr arm: mean SetLink time of an ordinary–super change
	IncrEntries  float64 // incr arm: mean phase 2 entries recomputed per super–super change
	IncrPairs    float64 // incr arm: mean super pairs whose distance moved per super–super change
	Mismatches   int     // gonum/plain arms: pairs whose distance differs from overlay/route's
	PairsChecked int
}

const resultPrefix = "OVERLAY-ROUTE-RESULT "

// seedGraph builds a seed-shaped graph: m fully meshed supers (1–10 Gbit/s, 2–40 ms), n-m
// ordinary nodes each tied to 1–3 random supers (100 Mbit/s–1 Gbit/s, 1–130 ms). Deterministic
// for given n, m.
func seedGraph(n, m int) ([]route.Node, []route.Link) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(m)))
	nodes := make([]route.Node, 0, n)
	for i := range m {
		nodes = append(nodes, route.Node{ID: fmt.Sprintf("s%04d", i), Kind: route.Super})
	}
	for i := range n - m {
		nodes = append(nodes, route.Node{ID: fmt.Sprintf("o%06d", i), Kind: route.Ordinary})
	}
	var links []route.Link
	for i := range m {
		for j := i + 1; j < m; j++ {
			links = append(links, route.Link{A: nodes[i].ID, B: nodes[j].ID, Metrics: route.Metrics{
				Bandwidth: uint64(1+rng.IntN(10)) * 1e9, Latency: time.Duration(2+rng.IntN(39)) * time.Millisecond}})
		}
	}
	for o := m; o < n; o++ {
		for _, s := range rng.Perm(m)[:1+rng.IntN(min(3, m))] {
			links = append(links, route.Link{A: nodes[o].ID, B: nodes[s].ID, Metrics: route.Metrics{
				Bandwidth: uint64(1+rng.IntN(10)) * 100e6, Latency: time.Duration(1+rng.IntN(130)) * time.Millisecond}})
		}
	}
	return nodes, links
}

// measure runs f and returns its wall time, allocated bytes and retained heap growth.
func measure(f func()) (sec, allocMB, retainedMB float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	f()
	sec = time.Since(t0).Seconds()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return sec, float64(after.TotalAlloc-before.TotalAlloc) / 1e6, (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / 1e6
}

// runArm runs one arm in this process. tb gets the failures.
func runArm(tb testing.TB, arm string, n, m int) result {
	tb.Helper()
	nodes, links := seedGraph(n, m)
	var res result
	switch arm {
	case "route":
		var r *route.Router
		var err error
		res.Seconds, res.AllocMB, res.RetainedMB = measure(func() { r, err = route.New(nodes, links) })
		if err != nil {
			tb.Fatalf("route.New: %v", err)
		}
		if n <= 10_000 {
			t0 := time.Now()
			entries := 0
			for _, nd := range nodes {
				t, err := r.Table(nd.ID)
				if err != nil {
					tb.Fatal(err)
				}
				entries += len(t.Supers)
			}
			res.TablesSec = time.Since(t0).Seconds()
			if entries == 0 {
				tb.Fatalf("no table entries at all")
			}
		}
		runtime.KeepAlive(r)
	case "incr":
		r, err := route.New(nodes, links)
		if err != nil {
			tb.Fatalf("route.New: %v", err)
		}
		// Each round degrades a good super–super link (the cheapest of 20 random ones: in a dense
		// mesh most direct links are beaten by two-hop paths, so a random one rarely matters) to
		// 2 s and then restores it — two timed changes that move routes — and changes one random
		// ordinary–super link.
		rng := rand.New(rand.NewPCG(1, 2))
		superLinks, ordLinks := m*(m-1)/2, len(links)-m*(m-1)/2
		const rounds = 10
		var superDur, ordDur time.Duration
		entries, pairs, superChanges, ordChanges := 0, 0, 0, 0
		set := func(l route.Link, met route.Metrics) route.Update {
			t0 := time.Now()
			u, err := r.SetLink(l.A, l.B, met)
			if u.Phase1 {
				superDur += time.Since(t0)
				superChanges++
			} else {
				ordDur += time.Since(t0)
				ordChanges++
			}
			if err != nil {
				tb.Fatalf("SetLink %s–%s: %v", l.A, l.B, err)
			}
			entries += u.OrdinaryEntriesRecomputed
			pairs += u.SuperPairsChanged
			return u
		}
		for range rounds {
			l := links[rng.IntN(superLinks)]
			for range 19 {
				c := links[rng.IntN(superLinks)]
				if cost(tb, c) < cost(tb, l) {
					l = c
				}
			}
			set(l, route.Metrics{Bandwidth: l.Metrics.Bandwidth, Latency: 2 * time.Second})
			set(l, l.Metrics)
			if ordLinks > 0 {
				l = links[superLinks+rng.IntN(ordLinks)]
				set(l, route.Metrics{Bandwidth: 1e9, Latency: time.Duration(1+rng.IntN(200)) * time.Millisecond})
			}
		}
		res.IncrSuperMs = float64(superDur.Microseconds()) / 1e3 / float64(max(1, superChanges))
		res.IncrOrdMs = float64(ordDur.Microseconds()) / 1e3 / float64(max(1, ordChanges))
		res.IncrEntries = float64(entries) / float64(max(1, superChanges))
		res.IncrPairs = float64(pairs) / float64(max(1, superChanges))
		if pairs == 0 {
			tb.Fatalf("no super–super distance moved in %d changes: the arm measures nothing", superChanges)
		}
	case "gonum":
		g, gid := splitGraph(tb, nodes, links)
		var sp path.AllShortest
		res.Seconds, res.AllocMB, res.RetainedMB = measure(func() { sp = path.DijkstraAllPaths(g) })
		r, err := route.New(nodes, links)
		if err != nil {
			tb.Fatal(err)
		}
		for _, a := range nodes {
			for _, b := range nodes {
				want := 0.0
				if a.ID != b.ID {
					want = sp.Weight(gid(a, true), gid(b, false))
				}
				got, ok, err := r.Distance(a.ID, b.ID)
				if err != nil || !ok || float64(got) != want {
					res.Mismatches++
				}
				res.PairsChecked++
			}
		}
	case "plain":
		var d []int64
		res.Seconds, res.AllocMB, res.RetainedMB = measure(func() { d = plainAllPairs(nodes, links) })
		r, err := route.New(nodes, links)
		if err != nil {
			tb.Fatal(err)
		}
		// a sample of rows: the whole matrix at 10k is 10⁸ lookups
		step := max(1, n/200)
		for i := 0; i < n; i += step {
			for j, b := range nodes {
				got, ok, err := r.Distance(nodes[i].ID, b.ID)
				if err != nil || !ok || int64(got) != d[i*n+j] {
					res.Mismatches++
				}
				res.PairsChecked++
			}
		}
	default:
		tb.Fatalf("unknown arm %q", arm)
	}
	return res
}

func cost(tb testing.TB, l route.Link) route.Cost {
	c, err := l.Metrics.Cost()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// splitGraph is the directed graph in which ordinary nodes never relay: ordinary node i is an
// entry (n+i, incoming edges only) and an exit (2n+i, outgoing only); supers are themselves.
func splitGraph(tb testing.TB, nodes []route.Node, links []route.Link) (*simple.WeightedDirectedGraph, func(route.Node, bool) int64) {
	n := int64(len(nodes))
	idx := make(map[string]int, len(nodes))
	for i, nd := range nodes {
		idx[nd.ID] = i
	}
	gid := func(nd route.Node, out bool) int64 {
		i := int64(idx[nd.ID])
		switch {
		case nd.Kind == route.Super:
			return i
		case out:
			return 2*n + i
		}
		return n + i
	}
	g := simple.NewWeightedDirectedGraph(0, math.Inf(1))
	for _, nd := range nodes {
		g.AddNode(simple.Node(gid(nd, true)))
		if nd.Kind == route.Ordinary {
			g.AddNode(simple.Node(gid(nd, false)))
		}
	}
	for _, l := range links {
		c, err := l.Metrics.Cost()
		if err != nil {
			tb.Fatal(err)
		}
		a, b := nodes[idx[l.A]], nodes[idx[l.B]]
		g.SetWeightedEdge(simple.WeightedEdge{F: simple.Node(gid(a, true)), T: simple.Node(gid(b, false)), W: float64(c)})
		g.SetWeightedEdge(simple.WeightedEdge{F: simple.Node(gid(b, true)), T: simple.Node(gid(a, false)), W: float64(c)})
	}
	return g, gid
}

// plainAllPairs is the plain two-phase computation the issue measured as a baseline: Floyd–
// Warshall among the supers, then every ordinary node to every super, then a dense n×n matrix
// of all pairs (ordinary to ordinary through the destination's supers). Unreachable: MaxInt64.
func plainAllPairs(nodes []route.Node, links []route.Link) []int64 {
	const inf = math.MaxInt64 / 4
	n := len(nodes)
	idx := make(map[string]int, n)
	var supers []int
	sidx := make([]int, n) // node → super index or -1
	for i, nd := range nodes {
		idx[nd.ID] = i
		sidx[i] = -1
		if nd.Kind == route.Super {
			sidx[i] = len(supers)
			supers = append(supers, i)
		}
	}
	m := len(supers)
	type att struct {
		s int
		c int64
	}
	atts := make([][]att, n)
	ds := make([]int64, m*m)
	for i := range ds {
		ds[i] = inf
	}
	for s := range m {
		ds[s*m+s] = 0
	}
	for _, l := range links {
		c, _ := l.Metrics.Cost()
		a, b := idx[l.A], idx[l.B]
		switch {
		case sidx[a] >= 0 && sidx[b] >= 0:
			ds[sidx[a]*m+sidx[b]], ds[sidx[b]*m+sidx[a]] = int64(c), int64(c)
		case sidx[a] >= 0:
			atts[b] = append(atts[b], att{sidx[a], int64(c)})
		default:
			atts[a] = append(atts[a], att{sidx[b], int64(c)})
		}
	}
	for k := range m {
		for i := range m {
			for j := range m {
				if v := ds[i*m+k] + ds[k*m+j]; v < ds[i*m+j] {
					ds[i*m+j] = v
				}
			}
		}
	}
	// toSuper[x*m+s]: node x to super s
	toSuper := make([]int64, n*m)
	for x := range n {
		row := toSuper[x*m : (x+1)*m]
		if sidx[x] >= 0 {
			copy(row, ds[sidx[x]*m:(sidx[x]+1)*m])
			continue
		}
		for s := range row {
			row[s] = inf
			for _, a := range atts[x] {
				if v := a.c + ds[a.s*m+s]; v < row[s] {
					row[s] = v
				}
			}
		}
	}
	d := make([]int64, n*n)
	for x := range n {
		for y := range n {
			switch {
			case x == y:
				d[x*n+y] = 0
			case sidx[y] >= 0:
				d[x*n+y] = toSuper[x*m+sidx[y]]
			default:
				best := int64(inf)
				for _, a := range atts[y] {
					if v := toSuper[x*m+a.s] + a.c; v < best {
						best = v
					}
				}
				d[x*n+y] = best
			}
		}
	}
	return d
}

// TestArm is two things. In a child process started by BenchmarkOverlayRoute ($OVERLAY_ROUTE_ARM
// set) it runs that one arm and prints its result. Otherwise (make test) it is the short form:
// every arm at 300 nodes / 20 supers in this process, and gonum and the plain baseline must agree
// with overlay/route on every pair. No timing is asserted.
func TestArm(t *testing.T) {
	if spec := os.Getenv(armEnv); spec != "" {
		arm, n, m, err := parseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		res := runArm(t, arm, n, m)
		out, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s%s\n", resultPrefix, out)
		return
	}
	for _, arm := range []string{"route", "incr", "gonum", "plain"} {
		res := runArm(t, arm, 300, 20)
		if res.Mismatches != 0 {
			t.Errorf("arm %s: %d of %d pairs differ from overlay/route", arm, res.Mismatches, res.PairsChecked)
		}
		if (arm == "gonum" || arm == "plain") && res.PairsChecked == 0 {
			t.Errorf("arm %s checked no pairs", arm)
		}
	}
}

func parseSpec(spec string) (arm string, n, m int, err error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return "", 0, 0, fmt.Errorf("%s=%q: want <arm>:<nodes>:<supers>", armEnv, spec)
	}
	n, err1 := strconv.Atoi(parts[1])
	m, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || m < 1 || n < m || n > route.MaxNodes || m > route.MaxSupers {
		return "", 0, 0, fmt.Errorf("%s=%q: nodes and supers must be numbers with 1 ≤ supers ≤ nodes ≤ %d", armEnv, spec, route.MaxNodes)
	}
	return parts[0], n, m, nil
}

// child runs one arm in a fresh process and returns its result and peak RSS in MB.
func child(b *testing.B, arm string, n, m int) (result, float64) {
	b.Helper()
	cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run=^TestArm$", "-test.count=1", "-test.timeout=60m")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d:%d", armEnv, arm, n, m))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("arm %s at %d/%d: %v\n%s%s", arm, n, m, err, out, stderr.Bytes())
	}
	var res result
	found := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				b.Fatalf("arm %s: result %q: %v", arm, line, err)
			}
			found = true
		}
	}
	if !found {
		b.Fatalf("arm %s at %d/%d printed no result:\n%s", arm, n, m, out)
	}
	rss := 0.0
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024 // kB on Linux
	}
	return res, rss
}

// BenchmarkOverlayRoute (issue 17, "Scale"): all routes at 1k, 2k, 10k and 100k nodes,
// incremental link changes at 10k and 100k, gonum's DijkstraAllPaths at 1k and 2k, the plain
// two-phase all-pairs at 1k, 2k and 10k — each arm in its own process.
//
//	go test -run '^$' -bench BenchmarkOverlayRoute -benchtime 1x -timeout 60m ./bench/overlayroute/
func BenchmarkOverlayRoute(b *testing.B) {
	type arm struct {
		name string
		n, m int
	}
	arms := []arm{
		{"route", 1_000, 100}, {"gonum", 1_000, 100}, {"plain", 1_000, 100},
		{"route", 2_000, 100}, {"gonum", 2_000, 100}, {"plain", 2_000, 100},
		{"route", 10_000, 100}, {"plain", 10_000, 100}, {"incr", 10_000, 100},
		{"route", 100_000, 1_000}, {"incr", 100_000, 1_000},
	}
	if only := os.Getenv("OVERLAY_ROUTE_ARMS"); only != "" { // e.g. "route,incr" to skip the slow arms
		arms = slices.DeleteFunc(arms, func(a arm) bool { return !slices.Contains(strings.Split(only, ","), a.name) })
	}
	for _, a := range arms {
		b.Run(fmt.Sprintf("%s/n=%d/m=%d", a.name, a.n, a.m), func(b *testing.B) {
			for range b.N {
				res, rss := child(b, a.name, a.n, a.m)
				if res.Mismatches != 0 {
					b.Fatalf("%d of %d pairs differ from overlay/route", res.Mismatches, res.PairsChecked)
				}
				b.ReportMetric(rss, "MB-peak-rss")
				if a.name == "incr" {
					b.ReportMetric(res.IncrSuperMs, "ms/super-link-change")
					b.ReportMetric(res.IncrOrdMs, "ms/ordinary-link-change")
					b.ReportMetric(res.IncrEntries, "entries/super-link-change")
					b.ReportMetric(res.IncrPairs, "pairs-moved/super-link-change")
					continue
				}
				b.ReportMetric(res.Seconds, "s/all-routes")
				b.ReportMetric(res.AllocMB, "MB-alloc")
				b.ReportMetric(res.RetainedMB, "MB-retained")
				if res.TablesSec > 0 {
					b.ReportMetric(res.TablesSec, "s/all-tables")
				}
			}
		})
	}
}
