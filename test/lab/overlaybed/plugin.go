//go:build linux

package overlaybed

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/test/lab/udprelay"
)

// Packages the plugin arm builds.
const (
	ovsplanedPkg = "github.com/ovsplane/ovsplane/cmd/ovsplaned"
	pluginPkg    = "github.com/ovsplane/ovsplane/plugins/overlay"
	pluginBin    = "ovsplane-plugin-overlay"
	// TunnelPort is the plugin's flow-based tunnel port on br-int (port type overlay-tunnel).
	TunnelPort = "tun0"
)

// PluginSpec tunes the plugin arm; the zero value is fast enough for a testbed (the plugin's
// own defaults are for a WAN).
type PluginSpec struct {
	// FabricSchema is the fabric database's schema file (overlay/fabric/schema/fabric.ovsschema).
	// Required.
	FabricSchema string
	// AgentPeriod is the agents' fabric polling period (0: 100 ms).
	AgentPeriod time.Duration
	// FlowRefresh is how often the daemon asks the plugin for flows (0: 100 ms).
	FlowRefresh time.Duration
	// ProbeInterval and ProbeWindow set the link probes (0: 100 ms and 10 echoes per report).
	ProbeInterval time.Duration
	ProbeWindow   int
	// MaxBandwidthMbit caps the probes' bandwidth estimate (0: 50). A cap every relayed path
	// exceeds makes the cost's bandwidth term equal on every link, so routes follow latency.
	MaxBandwidthMbit int64
}

// withDefaults fills the zero fields.
func (p PluginSpec) withDefaults() PluginSpec {
	if p.AgentPeriod == 0 {
		p.AgentPeriod = 100 * time.Millisecond
	}
	if p.FlowRefresh == 0 {
		p.FlowRefresh = 100 * time.Millisecond
	}
	if p.ProbeInterval == 0 {
		p.ProbeInterval = 100 * time.Millisecond
	}
	if p.ProbeWindow == 0 {
		p.ProbeWindow = 10
	}
	if p.MaxBandwidthMbit == 0 {
		p.MaxBandwidthMbit = 50
	}
	return p
}

// Plugin is the plugin arm: a 3-member fabric cluster and, per site, the real ovsplaned with
// the overlay plugin running an overlay-agent job (and an overlay-controller job on super
// nodes), the daemon in the site's namespace driving the site's OVS.
type Plugin struct {
	// Cluster is the fabric database.
	Cluster *lab.OVSDBCluster
	// Fabric is the test's own client of it, for observing versions and acks.
	Fabric *fabric.Client
	// Daemons are the sites' ovsplaned processes by site name.
	Daemons map[string]*testkit.Proc
}

// agentJob is the JSON of an overlay-agent job's config (the plugin's AgentConfig shape).
type agentJob struct {
	Node struct {
		Name     string   `json:"name"`
		Kind     string   `json:"kind"`
		Carriers []string `json:"carriers"`
		Underlay []string `json:"underlay"`
	} `json:"node"`
	FabricRemotes []string            `json:"fabric_remotes"`
	Bridge        string              `json:"bridge"`
	TunnelPort    string              `json:"tunnel_port"`
	VNI           uint32              `json:"vni"`
	Prefixes      map[string][]string `json:"prefixes"`
	PeriodMillis  int                 `json:"period_ms"`
	FlowRefresh   int                 `json:"flow_refresh_ms"`
	Probe         struct {
		Port             uint16 `json:"port"`
		IntervalMillis   int    `json:"interval_ms"`
		Window           int    `json:"window"`
		MaxBandwidthMbit int64  `json:"max_bandwidth_mbit"`
	} `json:"probe"`
}

// BedCostHysteresis is the cost hysteresis of the bed's controllers: their jobs set none, so
// it is the controller's default (a route version moves only for a larger change).
const BedCostHysteresis = controller.DefaultCostHysteresis

// controllerJob is the JSON of an overlay-controller job's config (no cost_hysteresis_pct:
// BedCostHysteresis).
type controllerJob struct {
	Holder        string   `json:"holder"`
	FabricRemotes []string `json:"fabric_remotes"`
	LeaseTTL      int      `json:"lease_ttl_ms"`
	PeriodMillis  int      `json:"period_ms"`
}

// StartPlugin starts the plugin arm on a bed built with Spec.PluginRoutes: it builds ovsplaned
// and the plugin, starts the fabric cluster, and starts each site's daemon with br-int (the
// internal port OverlayPort and the plugin's tunnel port TunnelPort) in its configuration, an
// agent job registering the site with its carriers and underlay address, the overlay prefix
// directory (each site's overlay address as a /32), and a controller job on every super node.
// It puts each site's overlay address on OverlayPort once the daemon created it. It fails the
// test on any error; the daemons are killed at cleanup.
func (b *Bed) StartPlugin(t testing.TB, ps PluginSpec) *Plugin {
	t.Helper()
	if !b.Spec.PluginRoutes {
		t.Fatalf("overlaybed: StartPlugin needs a bed built with Spec.PluginRoutes")
	}
	if ps.FabricSchema == "" {
		t.Fatalf("overlaybed: PluginSpec.FabricSchema is required")
	}
	ps = ps.withDefaults()
	cl := lab.StartOVSDBCluster(t, ps.FabricSchema)
	pl := &Plugin{Cluster: cl, Daemons: map[string]*testkit.Proc{}}
	root := testkit.ShortTempDir(t, "ovlbed-")
	pluginDir := filepath.Join(root, "plugins")
	sum := testkit.InstallPlugin(t, pluginPkg, pluginDir, pluginBin)
	daemonBin := testkit.BuildOnce(t, ovsplanedPkg)
	prefixes := map[string][]string{}
	for _, s := range b.Sites {
		prefixes[s.Name] = []string{netip.PrefixFrom(s.Overlay, 32).String()}
	}
	for _, s := range b.Sites {
		dir := filepath.Join(root, s.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		var a agentJob
		a.Node.Name, a.Node.Kind, a.Node.Carriers = s.Name, string(fabric.KindOrdinary), s.Carriers
		if s.Super {
			a.Node.Kind = string(fabric.KindSuper)
		}
		a.Node.Underlay = []string{s.Underlay.String()}
		a.FabricRemotes, a.Bridge, a.TunnelPort, a.VNI, a.Prefixes = cl.Endpoints(), "br-int", TunnelPort, VNI, prefixes
		a.PeriodMillis, a.FlowRefresh = int(ps.AgentPeriod.Milliseconds()), int(ps.FlowRefresh.Milliseconds())
		a.Probe.Port, a.Probe.IntervalMillis, a.Probe.Window, a.Probe.MaxBandwidthMbit =
			ProbePort, int(ps.ProbeInterval.Milliseconds()), ps.ProbeWindow, ps.MaxBandwidthMbit
		agent, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		jobs := fmt.Sprintf("      - name: agent\n        type: overlay-agent\n        config: %s\n", agent)
		if s.Super {
			ctl, err := json.Marshal(controllerJob{Holder: "ctl-" + s.Name, FabricRemotes: cl.Endpoints(), LeaseTTL: 2000, PeriodMillis: 100})
			if err != nil {
				t.Fatal(err)
			}
			jobs += fmt.Sprintf("      - name: controller\n        type: overlay-controller\n        config: %s\n", ctl)
		}
		conf := filepath.Join(dir, "ovsplaned.yaml")
		yaml := fmt.Sprintf(`plugin_dir: %s
bridges:
  - name: br-int
    datapath_type: netdev
    fail_mode: secure
    ports:
      - name: %[2]s
        interfaces:
          - {name: %[2]s, type: internal, mtu_request: %[3]d}
      - name: %[4]s
        interfaces:
          - {name: %[4]s, type: overlay-tunnel, options: {tunnel: vxlan}}
plugins:
  - name: overlay
    path: %[5]s
    sha256: %[6]s
    jobs:
%[7]s`, pluginDir, OverlayPort, OverlayMTU, TunnelPort, pluginBin, sum, jobs)
		if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := s.NS.Command(context.WithoutCancel(t.Context()), daemonBin, "--config", conf, "--data-dir", dir,
			"--ovsdb-endpoints", s.DB.Endpoint, "--log-level", "info")
		d := testkit.Start(t, cmd)
		pl.Daemons[s.Name] = d
		t.Cleanup(func() {
			d.Kill()
			if t.Failed() {
				t.Logf("ovsplaned of %s (tail):\n%s", s.Name, d.Out.Tail(4000))
			}
		})
	}
	for _, s := range b.Sites {
		lab.WaitFor(t, time.Minute, "ovsplaned of "+s.Name+" creating "+OverlayPort, func(ctx context.Context) error {
			if d := pl.Daemons[s.Name]; d.Exited() {
				t.Fatalf("ovsplaned of %s exited:\n%s", s.Name, d.Out.Tail(4000))
			}
			_, err := s.NS.Exec(ctx, "ip", "link", "show", "dev", OverlayPort)
			return err
		})
		s.NS.Run(t, "ip", "addr", "add", s.Overlay.String()+"/24", "dev", OverlayPort)
		s.NS.Run(t, "ip", "link", "set", OverlayPort, "up")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	fc, err := fabric.Open(ctx, fabric.Config{Endpoints: cl.Endpoints(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("overlaybed: open the fabric: %v", err)
	}
	t.Cleanup(fc.Close)
	pl.Fabric = fc
	return pl
}

// Version returns the fabric's newest route version.
func (p *Plugin) Version(ctx context.Context) (int64, error) {
	g, err := p.Fabric.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("overlaybed: fabric status: %w", err)
	}
	return g.RouteVersion, nil
}

// Converged is the fabric's state once every site acknowledged a route version.
type Converged struct {
	// Version is the newest route version at that moment; MinApplied the oldest version a
	// site runs (every site acked it or a newer one).
	Version, MinApplied int64
	// Applied is each site's acknowledged version.
	Applied map[string]int64
}

// WaitConverged waits until every one of the bed's sites has acknowledged a route version newer
// than after, and returns the state. It fails the test after timeout. (Every site running the
// newest version is not required: the controller publishes a new version whenever a measured
// cost moves, which under probe jitter can be every report.)
func (p *Plugin) WaitConverged(t testing.TB, b *Bed, after int64, timeout time.Duration) Converged {
	t.Helper()
	var c Converged
	lab.WaitFor(t, timeout, fmt.Sprintf("every one of the %d sites acking a route version after %d", len(b.Sites), after), func(ctx context.Context) error {
		var err error
		c, err = p.converged(ctx, b, after)
		return err
	})
	return c
}

// converged reports the fabric's state when every site acked a version newer than after;
// otherwise an error saying what is missing.
func (p *Plugin) converged(ctx context.Context, b *Bed, after int64) (Converged, error) {
	for name, d := range p.Daemons {
		if d.Exited() {
			return Converged{}, fmt.Errorf("ovsplaned of %s exited:\n%s", name, d.Out.Tail(2000))
		}
	}
	g, err := p.Fabric.Status(ctx)
	if err != nil {
		return Converged{}, err
	}
	_, per, err := p.Fabric.MinApplied(ctx)
	if err != nil {
		return Converged{}, err
	}
	c := Converged{Version: g.RouteVersion, Applied: map[string]int64{}}
	var missing []string
	for _, s := range b.Sites {
		v, ok := per[s.Name]
		if !ok || v <= after {
			missing = append(missing, fmt.Sprintf("%s at %d", s.Name, v))
		}
		c.Applied[s.Name] = v
		if c.MinApplied == 0 || v < c.MinApplied {
			c.MinApplied = v
		}
	}
	if len(missing) > 0 {
		return Converged{}, fmt.Errorf("route version %d; not past %d yet: %v", g.RouteVersion, after, missing)
	}
	return c, nil
}

// WaitLinks waits until the fabric holds a live measurement (bandwidth above 0) of every link
// the probes measure (each pair of sites sharing a carrier with a super node at one end or
// both), the newest route version is computed from them, and every site acked that version or
// a newer one; it returns the state: routes computed from the whole graph. It fails the test
// after timeout, saying which of these was missing (links not measured, the nodes whose tables
// in the newest version are not the graph's, or the sites not at it yet).
//
// "Computed from them" is checked on the tables, not on a version published after the links
// were seen: the controller publishes only when the tables move (past its cost hysteresis), so
// once it has published the version holding the last link, no newer one may ever come.
func (p *Plugin) WaitLinks(t testing.TB, b *Bed, timeout time.Duration) Converged {
	t.Helper()
	want := b.probedLinks()
	var c Converged
	lab.WaitFor(t, timeout, fmt.Sprintf("live measurements of the %d links %v in a route version every site acked", len(want), want), func(ctx context.Context) error {
		var err error
		c, err = p.linksConverged(ctx, b, want)
		return err
	})
	return c
}

// probedLinks names the links the probes measure (linkKey): each pair of sites sharing a
// carrier with a super node at one end or both.
func (b *Bed) probedLinks() []string {
	var want []string
	for i, x := range b.Sites {
		for _, y := range b.Sites[i+1:] {
			shared := slices.ContainsFunc(x.Carriers, func(c string) bool { return slices.Contains(y.Carriers, c) })
			if shared && (x.Super || y.Super) {
				want = append(want, linkKey(x.Name, y.Name))
			}
		}
	}
	return want
}

// linksConverged reports the fabric's state when every link in want (linkKey names) is live,
// the newest route version's tables are those the fabric's nodes and links give (within
// the controller's cost hysteresis, BedCostHysteresis), and every site acked that version or a
// newer one; otherwise an error saying what is missing.
func (p *Plugin) linksConverged(ctx context.Context, b *Bed, want []string) (Converged, error) {
	// Nodes and links first: a version read after them was computed from these or newer.
	nodes, err := p.Fabric.Nodes(ctx)
	if err != nil {
		return Converged{}, err
	}
	links, err := p.Fabric.Links(ctx)
	if err != nil {
		return Converged{}, err
	}
	live := map[string]bool{}
	for _, l := range links {
		live[linkKey(l.A, l.B)] = l.BandwidthKbps > 0
	}
	var missing []string
	for _, k := range want {
		if !live[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Converged{}, fmt.Errorf("not measured yet: %v", missing)
	}
	g, err := p.Fabric.Status(ctx)
	if err != nil {
		return Converged{}, err
	}
	if g.RouteVersion == 0 {
		return Converged{}, fmt.Errorf("no route version published yet")
	}
	cur, err := p.Fabric.Routes(ctx, g.RouteVersion)
	if err != nil {
		return Converged{}, err
	}
	full, _, err := controller.Tables(nodes, links)
	if err != nil {
		return Converged{}, fmt.Errorf("overlaybed: the routes of the measured graph: %w", err)
	}
	names := map[string]bool{}
	for n := range cur {
		names[n] = true
	}
	for n := range full {
		names[n] = true
	}
	var behind []string
	for _, n := range slices.Sorted(maps.Keys(names)) {
		_, moved, err := controller.Settle(fabric.Tables{n: cur[n]}, fabric.Tables{n: full[n]}, BedCostHysteresis)
		if err != nil {
			return Converged{}, fmt.Errorf("overlaybed: compare the routes of %s: %w", n, err)
		}
		if moved > 0 {
			behind = append(behind, n)
		}
	}
	if len(behind) > 0 {
		return Converged{}, fmt.Errorf("route version %d predates the measured links: the tables of %v differ from the graph's", g.RouteVersion, behind)
	}
	return p.converged(ctx, b, g.RouteVersion-1)
}

// Describe returns the fabric's state for a failure message: the newest route version with
// each site's acknowledged version, every link measurement and the version's route tables.
// What it could not read is said in its place.
func (p *Plugin) Describe(ctx context.Context) string {
	g, err := p.Fabric.Status(ctx)
	if err != nil {
		return fmt.Sprintf("fabric status: %v", err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "route version %d", g.RouteVersion)
	if _, per, err := p.Fabric.MinApplied(ctx); err != nil {
		fmt.Fprintf(&sb, "; acks: %v", err)
	} else {
		fmt.Fprintf(&sb, ", acked %v", per)
	}
	if links, err := p.Fabric.Links(ctx); err != nil {
		fmt.Fprintf(&sb, "; links: %v", err)
	} else {
		for _, l := range links {
			fmt.Fprintf(&sb, "; link %s: %d µs, %d kbit/s, loss %d ppm at %s", linkKey(l.A, l.B), l.LatencyUs, l.BandwidthKbps,
				l.LossPPM, l.MeasuredAt.Format("15:04:05.000"))
		}
	}
	if tables, err := p.Fabric.Routes(ctx, g.RouteVersion); err != nil {
		fmt.Fprintf(&sb, "; routes: %v", err)
	} else {
		for _, n := range slices.Sorted(maps.Keys(tables)) {
			fmt.Fprintf(&sb, "; %s routes %v", n, tables[n])
		}
	}
	return sb.String()
}

// linkKey names an undirected link by its ends in name order.
func linkKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + "-" + b
}

// ObservePath pings dst from src count times and returns the sites the echo requests crossed,
// read from the VXLAN relays' counters: the directions of paths that forwarded at least one
// datagram per reply, chained from src to dst (the replies may come back another way; that is
// not part of the result). It returns an error when no reply came back or the directions do not
// chain from src to dst. Other overlay traffic must not run meanwhile for the result to be
// exact; the plugin's probes use their own relays (ProbePort).
func (b *Bed) ObservePath(ctx context.Context, src, dst string, count int) ([]string, lab.PingStats, error) {
	vx := slices.Index(b.Spec.Ports, VXLANPort)
	if vx < 0 {
		return nil, lab.PingStats{}, fmt.Errorf("overlaybed: the bed relays no VXLAN port")
	}
	type dir struct {
		p *Path
		d udprelay.Direction
	}
	before := map[dir]uint64{}
	for _, p := range b.Paths() {
		for _, d := range []udprelay.Direction{udprelay.AToB, udprelay.BToA} {
			before[dir{p, d}] = p.Relays[vx].Counters(d).Forwarded
		}
	}
	st, err := b.Ping(ctx, src, dst, count)
	if err != nil {
		return nil, st, err
	}
	next := map[string][]string{}
	for k, n := range before {
		if k.p.Relays[vx].Counters(k.d).Forwarded-n >= uint64(st.Received) {
			from, to := k.p.X.Name, k.p.Y.Name
			if k.d == udprelay.BToA {
				from, to = to, from
			}
			next[from] = append(next[from], to)
		}
	}
	path := []string{src}
	for cur := src; cur != dst; {
		var fresh []string // the replies' directions lead back into the path
		for _, n := range next[cur] {
			if !slices.Contains(path, n) {
				fresh = append(fresh, n)
			}
		}
		if len(fresh) != 1 {
			return path, st, fmt.Errorf("overlaybed: path %s→%s does not chain at %s (directions used: %v)", src, dst, cur, next)
		}
		cur = fresh[0]
		path = append(path, cur)
	}
	return path, st, nil
}

// Move is what a link degradation did to the plugin's routes between two sites.
type Move struct {
	// Link names the degraded path ("a1-s1"); Shape is what its relays were set to.
	Link  string
	Shape udprelay.Shape
	// Src and Dst are the observed sites; Before and After the paths their pings took.
	Src, Dst      string
	Before, After []string
	// Moved is the time from the degradation until the first packet from Src took another
	// first hop (pings every 20 ms, so it is at most 20 ms late).
	Moved time.Duration
	// Version is the fabric's route version when the move was seen; Acked the time from the
	// degradation until every site had acknowledged it or a newer one.
	Version int64
	Acked   time.Duration
	// Published counts the route versions published from the degradation until Acked.
	Published int64
}

// MeasureMove degrades the path between x and y (both directions, every relayed port: the
// probes see it too) to shape while Src pings Dst every 20 ms, and measures how long the
// plugin took to move the route (the first datagram on another first hop of Src, read from
// the relays) and until every site acked a version at least as new as the one in force then.
// The path is set back to its base shape at the end. It fails the test when the route does not
// move within timeout.
func (b *Bed) MeasureMove(t testing.TB, p *Plugin, src, dst, x, y string, shape udprelay.Shape, timeout time.Duration) Move {
	t.Helper()
	deg := b.Path(x, y)
	if deg == nil {
		t.Fatalf("overlaybed: no path %s-%s", x, y)
	}
	vx := slices.Index(b.Spec.Ports, VXLANPort)
	before, _, err := b.ObservePath(t.Context(), src, dst, 5)
	if err != nil {
		t.Fatalf("overlaybed: before degrading %s-%s: %v", x, y, err)
	}
	first := b.Path(before[0], before[1])
	var others []*Path
	for _, q := range b.Paths() {
		if q != first && (q.X.Name == src || q.Y.Name == src) {
			others = append(others, q)
		}
	}
	base := map[*Path]uint64{}
	for _, q := range others {
		base[q] = q.forwardedOn(vx)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pinger := b.Site(src).NS.Command(ctx, "ping", "-n", "-q", "-i", "0.02", "-W", "1", b.Site(dst).Overlay.String())
	if err := pinger.Start(); err != nil {
		t.Fatalf("overlaybed: start ping: %v", err)
	}
	defer func() { cancel(); _ = pinger.Wait() }()
	g0, err := p.Fabric.Status(t.Context())
	if err != nil {
		t.Fatalf("overlaybed: %v", err)
	}
	m := Move{Link: x + "-" + y, Shape: shape, Src: src, Dst: dst, Before: before}
	start := time.Now()
	if err := deg.SetShape(shape); err != nil {
		t.Fatalf("overlaybed: %v", err)
	}
	defer func() {
		if err := deg.SetShape(deg.Base); err != nil {
			t.Errorf("overlaybed: %v", err)
		}
	}()
	lab.WaitFor(t, timeout, fmt.Sprintf("%s's route toward %s leaving %s-%s", src, dst, first.X.Name, first.Y.Name), func(context.Context) error {
		for _, q := range others {
			if q.forwardedOn(vx) > base[q] {
				return nil
			}
		}
		return fmt.Errorf("still on %s-%s", first.X.Name, first.Y.Name)
	})
	m.Moved = time.Since(start)
	g, err := p.Fabric.Status(t.Context())
	if err != nil {
		t.Fatalf("overlaybed: %v", err)
	}
	m.Version = g.RouteVersion
	c := p.WaitConverged(t, b, m.Version-1, timeout)
	m.Acked = time.Since(start)
	m.Published = c.Version - g0.RouteVersion
	cancel()
	_ = pinger.Wait()
	if m.After, _, err = b.ObservePath(t.Context(), src, dst, 5); err != nil {
		t.Fatalf("overlaybed: after degrading %s-%s: %v", x, y, err)
	}
	t.Logf("degraded %s to %v: %s→%s moved from %v to %v in %v, all sites at version ≥ %d after %v (%d versions published)",
		m.Link, shape.Delay, src, dst, m.Before, m.After, m.Moved, m.Version, m.Acked, m.Published)
	return m
}

// forwardedOn is the datagrams the path's relay of port index i forwarded, both directions.
func (p *Path) forwardedOn(i int) uint64 {
	r := p.Relays[i]
	return r.Counters(udprelay.AToB).Forwarded + r.Counters(udprelay.BToA).Forwarded
}

// ObserveSteadyPath waits until every site runs the newest route version, then observes the
// path of count pings from src to dst (ObservePath) and accepts it only if no new version was
// published meanwhile; otherwise it tries again, until timeout fails the test. Right after
// WaitLinks versions may still follow each other (the last links' measurements arrive one by
// one), and a path observed across a version change does not chain.
func (p *Plugin) ObserveSteadyPath(t testing.TB, b *Bed, src, dst string, count int, timeout time.Duration) ([]string, lab.PingStats) {
	t.Helper()
	var (
		path []string
		st   lab.PingStats
	)
	lab.WaitFor(t, timeout, fmt.Sprintf("%s reaching %s on one path under a steady route version", src, dst), func(ctx context.Context) error {
		c, err := p.converged(ctx, b, 0)
		if err != nil {
			return err
		}
		if c.MinApplied != c.Version {
			return fmt.Errorf("route version %d, sites at %v", c.Version, c.Applied)
		}
		if err := b.Warm(ctx, src, dst); err != nil {
			return err
		}
		if path, st, err = b.ObservePath(ctx, src, dst, count); err != nil {
			return err
		}
		v, err := p.Version(ctx)
		if err != nil {
			return err
		}
		if v != c.Version {
			return fmt.Errorf("route version moved from %d to %d while observing", c.Version, v)
		}
		return nil
	})
	return path, st
}
