package ovsinstall

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// fakeDir serves fixed nodes and tables.
type fakeDir struct {
	nodes  []fabric.NodeState
	tables fabric.Tables
	err    error
}

func (d *fakeDir) Nodes(context.Context) ([]fabric.NodeState, error) { return d.nodes, d.err }
func (d *fakeDir) Routes(context.Context, int64) (fabric.Tables, error) {
	return d.tables, d.err
}

func newSeedInstaller(t *testing.T, state string) (*Installer, *fakeDir) {
	t.Helper()
	nodes := seedNodes()
	tables, _, err := controller.Tables(nodes, seedLinks)
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDir{nodes: nodes, tables: tables}
	i, err := New(Config{Self: "a", Kind: fabric.KindOrdinary, Directory: d, Local: []netip.Addr{netip.MustParseAddr("10.1.0.2")},
		Own: seedPrefixes["a"], Prefixes: others("a"), VNI: 42, StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	return i, d
}

// serve plays the daemon: it asks for the flow set every few milliseconds until ctx ends.
func serve(ctx context.Context, i *Installer) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		_, _ = i.FlowSet(3, cookies, 100)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// TestInstallWaitsForTheDaemon: Install returns only once the daemon took the version's flows
// twice; without a daemon it returns the context's error and the table stays installed (and
// is served at the next call).
func TestInstallWaitsForTheDaemon(t *testing.T) {
	i, d := newSeedInstaller(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	err := i.Install(ctx, 3, d.tables["a"])
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not yet taken by ovsplaned") {
		t.Fatalf("Install without a daemon: %v", err)
	}
	if st := i.Status(); st.Installed.Version != 3 || st.Installs != 1 {
		t.Fatalf("status %+v", st)
	}
	fs, err := i.FlowSet(3, cookies, 250)
	if err != nil || fs.RefreshMillis != 250 || len(fs.Flows) == 0 || fs.Flows[0].Cookie != Cookie(cookies, 3) {
		t.Fatalf("FlowSet: %+v %v", fs, err)
	}
	if err := api.ValidateFlowSet(cookies, api.GroupRange{}, fs); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { serve(sctx, i); close(done) }()
	defer func() { stop(); <-done }()
	if err := i.Install(t.Context(), 3, d.tables["a"]); err != nil {
		t.Fatalf("Install again with a daemon: %v", err)
	}
	if st := i.Status(); st.Installs != 1 || st.Served != 3 || st.ServedCount < 2 {
		t.Errorf("a repeated install resolved again or was not served: %+v", st)
	}
	if err := i.Install(t.Context(), 4, d.tables["a"]); err != nil {
		t.Fatalf("Install version 4: %v", err)
	}
	if st := i.Status(); st.Installs != 2 || st.Served != 4 {
		t.Errorf("version 4: %+v", st)
	}
}

// TestRefusedTableKeepsTheLastGood: a table naming an unknown node is refused and counted;
// the installed table and its flows stay.
func TestRefusedTableKeepsTheLastGood(t *testing.T) {
	i, d := newSeedInstaller(t, "")
	sctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { serve(sctx, i); close(done) }()
	defer func() { stop(); <-done }()
	if err := i.Install(t.Context(), 1, d.tables["a"]); err != nil {
		t.Fatal(err)
	}
	before, _ := i.FlowSet(3, cookies, 100)
	err := i.Install(t.Context(), 2, map[string]string{"s1": "ghost 5"})
	if !errors.Is(err, ErrBadTable) {
		t.Fatalf("bad table: %v", err)
	}
	st := i.Status()
	if st.Installed.Version != 1 || st.Refused != 1 || !strings.Contains(st.LastRefusal, "ghost") {
		t.Errorf("after a refusal: %+v", st)
	}
	after, _ := i.FlowSet(3, cookies, 100)
	if len(after.Flows) != len(before.Flows) || after.Flows[0] != before.Flows[0] {
		t.Errorf("flows changed after a refused table")
	}
	// An unreachable fabric is not a refusal: nothing is counted, the table stays.
	d.err = errors.New("fabric down")
	if err := i.Install(t.Context(), 3, d.tables["a"]); err == nil || errors.Is(err, ErrBadTable) {
		t.Errorf("fabric down: %v", err)
	}
	if st := i.Status(); st.Installed.Version != 1 || st.Refused != 1 {
		t.Errorf("fabric down: %+v", st)
	}
}

// TestStoredTableSurvivesRestart: a new installer on the same state file forwards on the
// stored table before the fabric answers; a file of another node, or a damaged one, is ignored.
func TestStoredTableSurvivesRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "table.json")
	i, d := newSeedInstaller(t, state)
	sctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { serve(sctx, i); close(done) }()
	if err := i.Install(t.Context(), 5, d.tables["a"]); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	want, _ := i.FlowSet(3, cookies, 100)

	again, _ := newSeedInstaller(t, state)
	st := again.Status()
	if !st.Loaded || st.Installed.Version != 5 {
		t.Fatalf("restarted installer: %+v", st)
	}
	got, err := again.FlowSet(3, cookies, 100)
	if err != nil || len(got.Flows) != len(want.Flows) {
		t.Fatalf("restarted flows: %d, want %d (%v)", len(got.Flows), len(want.Flows), err)
	}
	for k := range got.Flows {
		if got.Flows[k] != want.Flows[k] {
			t.Errorf("flow %d: %+v, want %+v", k, got.Flows[k], want.Flows[k])
		}
	}
	if _, err := LoadTable(state, "b"); err == nil {
		t.Error("another node's table loaded")
	}
	for name, data := range map[string]string{
		"garbage":     "{",
		"unknown key": `{"version":1,"node":"a","hops":[],"x":1}`,
		"bad hop":     `{"version":1,"node":"a","hops":[{"dest":"b","next_hop":"s,1","underlay":"10.0.0.1","cost":1}]}`,
		"unsorted":    `{"version":1,"node":"a","hops":[{"dest":"c","next_hop":"s1","underlay":"10.0.0.1","cost":1},{"dest":"b","next_hop":"s1","underlay":"10.0.0.1","cost":1}]}`,
	} {
		if err := os.WriteFile(state, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadTable(state, "a"); err == nil {
			t.Errorf("%s: loaded", name)
		}
		if i, _ := newSeedInstaller(t, state); i.Status().Loaded {
			t.Errorf("%s: installer started from it", name)
		}
	}
}

func TestTunnelShape(t *testing.T) {
	o, err := TunnelShape("geneve", 6082)
	if err != nil || o["remote_ip"] != "flow" || o["key"] != "flow" || o["dst_port"] != "6082" || len(o) != 3 {
		t.Errorf("geneve: %v %v", o, err)
	}
	if _, err := TunnelShape("gre", 1); err == nil {
		t.Error("gre with a UDP port accepted")
	}
	if _, err := TunnelShape("patch", 0); err == nil {
		t.Error("patch accepted as a tunnel")
	}
}
