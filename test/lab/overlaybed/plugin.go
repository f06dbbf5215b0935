//go:build linux

package overlaybed

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
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

// controllerJob is the JSON of an overlay-controller job's config.
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

// ObservePath pings dst from src count times and returns the sites the packets crossed, read
// from the relays' counters: the paths that forwarded at least 2 datagrams per reply (the
// request and the reply each cross a path once), chained from src. It returns an error when no
// reply came back or the paths do not chain from src to dst. Other traffic (probes, another
// test's pings) must not run meanwhile on the same paths for the result to be exact; probes
// use their own relays (ProbePort), so only the VXLAN relays are read.
func (b *Bed) ObservePath(ctx context.Context, src, dst string, count int) ([]string, lab.PingStats, error) {
	vx := slices.Index(b.Spec.Ports, VXLANPort)
	if vx < 0 {
		return nil, lab.PingStats{}, fmt.Errorf("overlaybed: the bed relays no VXLAN port")
	}
	before := map[*Path]uint64{}
	for _, p := range b.Paths() {
		before[p] = p.forwardedOn(vx)
	}
	st, err := b.Ping(ctx, src, dst, count)
	if err != nil {
		return nil, st, err
	}
	used := map[string][]string{}
	for _, p := range b.Paths() {
		if p.forwardedOn(vx)-before[p] >= 2*uint64(st.Received) {
			used[p.X.Name] = append(used[p.X.Name], p.Y.Name)
			used[p.Y.Name] = append(used[p.Y.Name], p.X.Name)
		}
	}
	path := []string{src}
	for cur, prev := src, ""; cur != dst; {
		var next []string
		for _, n := range used[cur] {
			if n != prev {
				next = append(next, n)
			}
		}
		if len(next) != 1 || len(path) > len(b.Sites) {
			return path, st, fmt.Errorf("overlaybed: path %s→%s does not chain at %s (used paths %v)", src, dst, cur, used)
		}
		prev, cur = cur, next[0]
		path = append(path, cur)
	}
	return path, st, nil
}

// forwardedOn is the datagrams the path's relay of port index i forwarded, both directions.
func (p *Path) forwardedOn(i int) uint64 {
	r := p.Relays[i]
	return r.Counters(0).Forwarded + r.Counters(1).Forwarded
}
