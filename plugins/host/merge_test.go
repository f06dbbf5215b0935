package host

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// TestGlobalConfigConflicts: two plugins giving one key different values is a conflict naming
// both and the key, and neither value is applied; a plugin disagreeing with the daemon's own
// config likewise; agreeing contributions and dpdk-extra fragments merge.
func TestGlobalConfigConflicts(t *testing.T) {
	f := newFixture(t)
	alpha := f.install("v1", "alpha")
	alpha.Config = map[string]any{
		"other_config": map[string]any{"shared": "1", "alpha-only": "a", "same": "v"},
		"dpdk_extra":   []any{"--alpha"},
	}
	beta := f.install("v1", "beta")
	beta.Config = map[string]any{
		"other_config": map[string]any{"shared": "2", "same": "v", "pmd-cpu-mask": "0x3", "dpdk-init": "true"},
		"dpdk_extra":   []any{"--beta x"},
	}
	f.start(alpha, beta)
	got := f.h.GlobalConfig(t.Context(), map[string]string{"pmd-cpu-mask": "0x6", "dpdk-init": "true", "dpdk-extra": "--own"})
	want := map[string]string{"alpha-only": "a", "same": "v", "dpdk-extra": "--own --alpha --beta x"}
	if !reflect.DeepEqual(got.OtherConfig, want) {
		t.Errorf("OtherConfig %v, want %v", got.OtherConfig, want)
	}
	if !reflect.DeepEqual(got.Owners["same"], []string{"alpha", "beta"}) {
		t.Errorf("owners of same: %v", got.Owners["same"])
	}
	if len(got.Errors) > 0 {
		t.Errorf("errors: %v", got.Errors)
	}
	var msgs []string
	for _, c := range got.Conflicts {
		msgs = append(msgs, c.Error())
	}
	wantMsgs := []string{
		`other_config:pmd-cpu-mask: plugin "beta" wants "0x3", the daemon's configuration has "0x6"; the daemon's value stays, no plugin's is applied`,
		`other_config:shared: plugin "alpha" wants "1", plugin "beta" wants "2"; neither is applied`,
	}
	if !reflect.DeepEqual(msgs, wantMsgs) {
		t.Errorf("conflicts:\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(wantMsgs, "\n"))
	}
}

// A plugin refused at start never ran: its contribution is unknown, and GlobalConfig says so
// (the daemon keeps the keys it found rather than pruning them); a running plugin is known.
func TestGlobalConfigNamesPluginsThatNeverStarted(t *testing.T) {
	f := newFixture(t)
	alpha := f.install("v1", "alpha")
	alpha.Config = map[string]any{"other_config": map[string]any{"alpha-only": "a"}}
	refused := f.install("v1", "refused")
	refused.SHA256 = strings.Repeat("0", 64)
	f.start(alpha, refused)
	if st := f.status("refused"); st.State != StateRefused {
		t.Fatalf("refused plugin: state %s", st.State)
	}
	got := f.h.GlobalConfig(t.Context(), nil)
	if !reflect.DeepEqual(got.Unknown, []string{"refused"}) {
		t.Errorf("Unknown = %q, want [refused]", got.Unknown)
	}
	if got.OtherConfig["alpha-only"] != "a" {
		t.Errorf("OtherConfig = %v: the running plugin's key is missing", got.OtherConfig)
	}
}

// TestFlows: zero cookies get the plugin's cookie; a cookie outside the plugin's range is an
// error naming the plugin, and its flows are not returned.
func TestFlows(t *testing.T) {
	f := newFixture(t)
	good := f.install("v1", "flowy")
	bad := f.install("v1", "rogue")
	bad.Config = map[string]any{"bad_cookie": true}
	f.start(good, bad)
	got := f.h.Flows(t.Context(), api.BridgeFacts{Name: "br0"})
	if len(got) != 2 || got[0].Plugin != "flowy" || got[1].Plugin != "rogue" {
		t.Fatalf("flows: %+v", got)
	}
	g := got[0]
	if g.Err != nil || len(g.Set.Flows) != 1 || g.Set.Flows[0].Cookie != g.Cookies.Value || g.Cookies.Value>>56 != cookieMarker {
		t.Errorf("flowy: %+v", g)
	}
	if got[0].Cookies == got[1].Cookies || got[0].Groups == got[1].Groups {
		t.Errorf("two plugins share ranges: %+v %+v", got[0], got[1])
	}
	r := got[1]
	if code, msg := codeOf(r.Err); code != api.Internal || !strings.Contains(msg, `plugin "rogue": Flows bridge br0`) || !strings.Contains(msg, "outside the plugin's cookies") || len(r.Set.Flows) != 0 {
		t.Errorf("rogue: %s %q %+v", code, msg, r.Set)
	}
	if st := f.status("flowy"); st.Cookies != g.Cookies {
		t.Errorf("status cookies %+v, flows %+v", st.Cookies, g.Cookies)
	}
}

// TestReloadAndClose: a config-only change reconfigures the running process; a removed plugin
// is stopped; sockets live in a private dir that Close removes.
func TestReloadAndClose(t *testing.T) {
	f := newFixture(t)
	a := f.install("v1", "keep")
	b := f.install("v1", "drop")
	h := f.start(a, b)
	keepPID, dropPID := f.status("keep").PID, f.status("drop").PID
	fi, err := os.Stat(filepath.Join(f.dataDir, "plugin-run"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket dir: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(filepath.Join(f.dataDir, "plugin-run"))
	if len(entries) != 2 {
		t.Errorf("socket dirs %v", entries)
	}
	a.Config = map[string]any{"other_config": map[string]any{"k": "v"}}
	must(t, h.Reload(t.Context(), []model.Plugin{a}))
	if st := f.status("keep"); st.PID != keepPID || st.State != StateRunning {
		t.Errorf("keep after reload: %+v", st)
	}
	if got := h.GlobalConfig(t.Context(), nil).OtherConfig; got["k"] != "v" {
		t.Errorf("new config not applied: %v", got)
	}
	if len(h.Plugins()) != 1 {
		t.Errorf("plugins after reload: %+v", h.Plugins())
	}
	f.waitFor("the dropped plugin's exit", func() bool { return len(processesOf(t, filepath.Join(f.pluginDir, "drop"))) == 0 })
	_ = dropPID
	must(t, h.Close(t.Context()))
	if _, err := os.Stat(filepath.Join(f.dataDir, "plugin-run")); !os.IsNotExist(err) {
		t.Errorf("socket dir after Close: %v", err)
	}
	if procs := processesOf(t, filepath.Join(f.pluginDir, "keep")); len(procs) > 0 {
		t.Errorf("processes after Close: %v", procs)
	}
}
