//go:build linux

package host

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
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
	if !sameFacts(a, b) {
		t.Error("the same facts in another order, another DataDir: not the same")
	}
	for _, change := range []func(*api.HostFacts){
		func(f *api.HostFacts) { f.AppctlCommands = []string{"a"} },
		func(f *api.HostFacts) { f.DPDKInitialized = true },
		func(f *api.HostFacts) { f.DatapathTypes = []string{"netdev"} },
		func(f *api.HostFacts) { f.OVSVersion = "3.2.0" },
	} {
		c := a
		change(&c)
		if sameFacts(a, c) {
			t.Errorf("%+v and %+v: the same", a, c)
		}
	}
}
