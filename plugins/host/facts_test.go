//go:build linux

package host

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
)

// factsRecord is one line the facts plugin (testdata/factsplugin) writes per Configure.
type factsRecord struct {
	PID   int           `json:"pid"`
	Facts api.HostFacts `json:"facts"`
}

// configured returns what the facts plugin recorded, one record per Configure.
func (f *fixture) configured(name string) []factsRecord {
	f.t.Helper()
	file, err := os.Open(filepath.Join(f.dataDir, "plugin-data", name, "configured.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	var out []factsRecord
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r factsRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			f.t.Fatalf("configured.jsonl: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// installFactsPlugin builds testdata/factsplugin into the plugin dir as name.
func (f *fixture) installFactsPlugin(name string) model.Plugin {
	f.t.Helper()
	data, err := os.ReadFile(testkit.BuildOnce(f.t, "./testdata/factsplugin"))
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.pluginDir, name), data, 0o755); err != nil {
		f.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return model.Plugin{Name: name, Path: name, SHA256: hex.EncodeToString(sum[:])}
}

// TestRefreshFactsAfterVswitchdRestart: a real plugin process is configured with the command
// set of a real ovs-vswitchd (dummy datapath: its netdev-dummy commands, the userspace
// datapath's dpif-netdev/pmd-rxq-show, list-commands, version), read over unixctl as the daemon
// does. RefreshFacts with the same facts configures nobody; after ovs-vswitchd was restarted
// without the dummy datapath (another command set) and with another OVS version in the facts,
// RefreshFacts configures the plugin again, once, with the new facts; a further call changes
// nothing.
func TestRefreshFactsAfterVswitchdRestart(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})

	f := newFixture(t)
	var mu sync.Mutex
	version := "3.1.0"
	f.opts.Facts = func(ctx context.Context) (api.HostFacts, error) {
		ctl, err := ovsproc.VswitchdCtl(db.Dir)
		if err != nil {
			return api.HostFacts{}, err
		}
		cmds, err := ovsproc.AppctlCommands(ctx, ctl)
		if err != nil {
			return api.HostFacts{}, err
		}
		mu.Lock()
		defer mu.Unlock()
		return api.HostFacts{OVSVersion: version, IfaceTypes: []string{"internal", "system"}, AppctlCommands: cmds, OVSRunDir: db.Dir}, nil
	}
	h := f.start(f.installFactsPlugin("facts"))
	if st := f.status("facts"); st.State != StateRunning {
		t.Fatalf("plugin: %+v", st)
	}
	recs := f.configured("facts")
	if len(recs) != 1 {
		t.Fatalf("%d Configure calls at start, want 1", len(recs))
	}
	first := recs[0].Facts
	for _, c := range []string{"list-commands", "version", "dpif-netdev/pmd-rxq-show", "netdev-dummy/receive"} {
		if !first.HasAppctlCommand(c) {
			t.Errorf("the plugin's AppctlCommands (%d) lack %s", len(first.AppctlCommands), c)
		}
	}
	if first.DataDir != filepath.Join(f.dataDir, "plugin-data", "facts") || first.OVSVersion != "3.1.0" {
		t.Errorf("facts at start: DataDir %q, OVSVersion %q", first.DataDir, first.OVSVersion)
	}

	ctx := t.Context()
	if got, err := h.RefreshFacts(ctx); err != nil || len(got) != 0 {
		t.Errorf("RefreshFacts with unchanged facts = %v, %v", got, err)
	}
	if n := len(f.configured("facts")); n != 1 {
		t.Errorf("%d Configure calls after a refresh of unchanged facts, want 1", n)
	}

	// ovs-vswitchd restarted as another build would be: without the dummy datapath.
	sw.Stop(t)
	spec := ovsproc.Layout{Dir: db.Dir}.Vswitchd(ovsproc.DefaultVswitchd, "--disable-system", "--disable-system-route")
	p, err := ovsproc.NewDaemon(spec).Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop(context.Background(), func(ctx context.Context) error {
			_, err := ovsproc.Unixctl(ctx, spec.Ctl, "exit")
			return err
		})
	})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	wctx, stop := p.Watch(wctx)
	defer stop()
	if _, err := (ovsproc.Tools{Env: db.Env(), Endpoint: db.Endpoint}).WaitVswitchd(wctx, spec.Ctl, false); err != nil {
		t.Fatal(p.Report(err))
	}
	mu.Lock()
	version = "3.1.1"
	mu.Unlock()
	got, err := h.RefreshFacts(ctx)
	if err != nil || !slices.Equal(got, []string{"facts"}) {
		t.Fatalf("RefreshFacts after the restart = %v, %v; want [facts]", got, err)
	}
	recs = f.configured("facts")
	if len(recs) != 2 || recs[1].PID != recs[0].PID {
		t.Fatalf("Configure calls after the restart: %+v; want a second one in the same process", recs)
	}
	now := recs[1].Facts
	if now.HasAppctlCommand("netdev-dummy/receive") || !now.HasAppctlCommand("dpif-netdev/pmd-rxq-show") || !now.HasAppctlCommand("list-commands") || now.OVSVersion != "3.1.1" {
		t.Errorf("facts after the restart: version %q, %d commands %q", now.OVSVersion, len(now.AppctlCommands), now.AppctlCommands)
	}
	t.Logf("commands: %d with the dummy datapath, %d without", len(first.AppctlCommands), len(now.AppctlCommands))
	if got, err := h.RefreshFacts(ctx); err != nil || len(got) != 0 || len(f.configured("facts")) != 2 {
		t.Errorf("a second RefreshFacts = %v, %v (%d Configure calls)", got, err, len(f.configured("facts")))
	}
}

func TestSameFacts(t *testing.T) {
	a := api.HostFacts{OVSVersion: "3.1.0", IfaceTypes: []string{"system", "internal"}, AppctlCommands: []string{"a", "b"}, DataDir: "/x"}
	b := a
	b.IfaceTypes, b.DataDir = []string{"internal", "system"}, "/y"
	if !sameFacts(a, b, nil) {
		t.Error("the same facts in another order, another DataDir: not the same")
	}
	for _, change := range []func(*api.HostFacts){
		func(f *api.HostFacts) { f.AppctlCommands = []string{"a"} },
		func(f *api.HostFacts) { f.DPDKInitialized = true },
		func(f *api.HostFacts) { f.DatapathTypes = []string{"netdev"} },
		func(f *api.HostFacts) { f.OVSVersion = "3.2.0" },
		func(f *api.HostFacts) { f.OtherConfig = map[string]string{"pmd-cpu-mask": "0x6"} },
	} {
		c := a
		change(&c)
		if sameFacts(a, c, nil) {
			t.Errorf("%+v and %+v: the same", a, c)
		}
	}
}

func TestSameOtherConfig(t *testing.T) {
	was := map[string]string{"pmd-cpu-mask": "0x6", "dpdk-init": "true"}
	written := map[string]string{"vhost-async-support": "true", "dpdk-extra": "-a x"}
	for _, c := range []struct {
		now  map[string]string
		same bool
	}{
		{map[string]string{"pmd-cpu-mask": "0x6", "dpdk-init": "true"}, true},
		// The plugins' contribution landing: no news.
		{map[string]string{"pmd-cpu-mask": "0x6", "dpdk-init": "true", "vhost-async-support": "true", "dpdk-extra": "-a x"}, true},
		// A contributed key with another value (an operator's): news.
		{map[string]string{"pmd-cpu-mask": "0x6", "dpdk-init": "true", "vhost-async-support": "false"}, false},
		{map[string]string{"pmd-cpu-mask": "0x3", "dpdk-init": "true"}, false},
		{map[string]string{"pmd-cpu-mask": "0x6"}, false},
		{map[string]string{"pmd-cpu-mask": "0x6", "dpdk-init": "true", "other": "1"}, false},
	} {
		if got := sameOtherConfig(was, c.now, written); got != c.same {
			t.Errorf("sameOtherConfig(%v, %v, %v) = %v", was, c.now, written, got)
		}
	}
}

func TestBoundFacts(t *testing.T) {
	big := map[string]string{"bad\x00key": "v", "ok": "v", "ctl": "a\nb", "long": strings.Repeat("x", limits.MaxValueBytes+1)}
	for i := range limits.MaxMapEntries + 10 {
		big[fmt.Sprintf("k%04d", i)] = "v"
	}
	in := api.HostFacts{OtherConfig: big}
	got, dropped := boundFacts(in)
	if len(got.OtherConfig) != limits.MaxMapEntries {
		t.Errorf("bounded other_config has %d entries, want %d", len(got.OtherConfig), limits.MaxMapEntries)
	}
	if dropped != len(big)-limits.MaxMapEntries {
		t.Errorf("dropped %d, want %d", dropped, len(big)-limits.MaxMapEntries)
	}
	for _, k := range []string{"bad\x00key", "ctl", "long"} {
		if _, ok := got.OtherConfig[k]; ok {
			t.Errorf("%q passed the bounds", k)
		}
	}
	if err := limits.CheckMap("Open_vSwitch", "other_config", got.OtherConfig); err != nil {
		t.Errorf("bounded other_config fails the limits: %v", err)
	}
	if _, ok := big["k0000"]; !ok || len(big) != limits.MaxMapEntries+14 {
		t.Error("boundFacts changed the caller's map")
	}
}

// A plugin whose global config contribution changes with every Configure (the number of its
// Configure calls, plus a fixed key and a dpdk-extra fragment) is configured once at start and
// never again while the host's own writes of that contribution land in other_config (the
// Facts function reads a simulated Open_vSwitch.other_config the test writes as the daemon
// would, after every GlobalConfig): Configure → Contribute → write → Configure does not loop.
// An operator's change of pmd-cpu-mask configures it again, exactly once, with the new value in
// its facts; so does an operator's change of a contributed key to another value.
func TestRefreshFactsOtherConfigNoLoop(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	ovsdbOC := map[string]string{"dpdk-init": "true", "pmd-cpu-mask": "0x2"}
	f.opts.Facts = func(context.Context) (api.HostFacts, error) {
		mu.Lock()
		defer mu.Unlock()
		return api.HostFacts{OVSVersion: "3.1.0", OtherConfig: maps.Clone(ovsdbOC)}, nil
	}
	var configured []Status
	f.opts.OnConfigured = func(st Status) {
		mu.Lock()
		configured = append(configured, st)
		mu.Unlock()
	}
	p := f.installFactsPlugin("facts")
	p.Config = map[string]any{"contribute": map[string]any{"vhost-async-support": "true"}, "dpdk_extra": []any{"--no-telemetry"}, "count_key": "facts-configures"}
	h := f.start(p)
	if st := f.status("facts"); st.State != StateRunning || st.Configured != 1 {
		t.Fatalf("plugin: %+v", st)
	}
	ctx := t.Context()
	// The daemon's part: merge the contributions and write them.
	write := func() {
		g := h.GlobalConfig(ctx, map[string]string{"dpdk-extra": "--in-memory"})
		mu.Lock()
		maps.Copy(ovsdbOC, g.OtherConfig)
		mu.Unlock()
	}
	for i := range 5 {
		write()
		if got, err := h.RefreshFacts(ctx); err != nil || len(got) != 0 {
			t.Fatalf("round %d: RefreshFacts after the host wrote the plugin's own contribution = %v, %v; want nothing configured", i, got, err)
		}
	}
	mu.Lock()
	if ovsdbOC["vhost-async-support"] != "true" || ovsdbOC["dpdk-extra"] != "--in-memory --no-telemetry" || ovsdbOC["facts-configures"] == "" {
		t.Errorf("written other_config %v", ovsdbOC)
	}
	mu.Unlock()
	if n := len(f.configured("facts")); n != 1 {
		t.Fatalf("%d Configure calls, want the start's only", n)
	}

	// The operator changes pmd-cpu-mask (ovs-vsctl set Open_vSwitch . other_config:pmd-cpu-mask=0x6).
	mu.Lock()
	ovsdbOC["pmd-cpu-mask"] = "0x6"
	mu.Unlock()
	if got, err := h.RefreshFacts(ctx); err != nil || !slices.Equal(got, []string{"facts"}) {
		t.Fatalf("RefreshFacts after pmd-cpu-mask changed = %v, %v; want [facts]", got, err)
	}
	for i := range 5 {
		write() // the contribution changed (facts-configures is 2 now): written again
		if got, err := h.RefreshFacts(ctx); err != nil || len(got) != 0 {
			t.Fatalf("round %d after the operator's change: RefreshFacts = %v, %v; want nothing configured", i, got, err)
		}
	}
	recs := f.configured("facts")
	if len(recs) != 2 || recs[1].Facts.OtherConfig["pmd-cpu-mask"] != "0x6" || recs[0].Facts.OtherConfig["pmd-cpu-mask"] != "0x2" {
		t.Fatalf("Configure records %+v; want two, the second with pmd-cpu-mask 0x6", recs)
	}
	mu.Lock()
	if len(configured) != 1 || configured[0].Configured != 2 || ovsdbOC["facts-configures"] != "2" {
		t.Errorf("OnConfigured calls %+v, other_config %v; want one, Configured 2", configured, ovsdbOC)
	}
	mu.Unlock()
	// The daemon's own dpdk-extra changes (its configuration reloaded): the merged value the
	// host writes is news for the plugin, once.
	g := h.GlobalConfig(ctx, map[string]string{"dpdk-extra": "--in-memory --file-prefix=ovs2"})
	mu.Lock()
	maps.Copy(ovsdbOC, g.OtherConfig)
	mu.Unlock()
	if got, err := h.RefreshFacts(ctx); err != nil || !slices.Equal(got, []string{"facts"}) {
		t.Fatalf("RefreshFacts after the daemon's dpdk-extra changed = %v, %v; want [facts]", got, err)
	}
	recs = f.configured("facts")
	if extra := recs[len(recs)-1].Facts.OtherConfig["dpdk-extra"]; extra != "--in-memory --file-prefix=ovs2 --no-telemetry" {
		t.Errorf("dpdk-extra in the facts %q", extra)
	}
	for i := range 3 {
		mu.Lock()
		maps.Copy(ovsdbOC, h.GlobalConfig(ctx, map[string]string{"dpdk-extra": "--in-memory --file-prefix=ovs2"}).OtherConfig)
		mu.Unlock()
		if got, err := h.RefreshFacts(ctx); err != nil || len(got) != 0 {
			t.Fatalf("round %d after the daemon's dpdk-extra change: RefreshFacts = %v, %v; want nothing configured", i, got, err)
		}
	}
	write = func() {
		g := h.GlobalConfig(ctx, map[string]string{"dpdk-extra": "--in-memory --file-prefix=ovs2"})
		mu.Lock()
		maps.Copy(ovsdbOC, g.OtherConfig)
		mu.Unlock()
	}
	mu.Lock()
	// An operator sets a contributed key to another value: news for the plugin.
	ovsdbOC["vhost-async-support"] = "false"
	mu.Unlock()
	if got, err := h.RefreshFacts(ctx); err != nil || !slices.Equal(got, []string{"facts"}) {
		t.Fatalf("RefreshFacts after vhost-async-support was changed by hand = %v, %v; want [facts]", got, err)
	}
	write()
	if got, err := h.RefreshFacts(ctx); err != nil || len(got) != 0 || len(f.configured("facts")) != 4 {
		t.Errorf("after the host wrote its value back: RefreshFacts = %v, %v, %d Configure calls; want none, 4", got, err, len(f.configured("facts")))
	}
}
