package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// contributing installs the test plugin as name with a config contributing other_config k=v.
func (f *fixture) contributing(name string) model.Plugin {
	p := f.install("v1", name)
	p.Config = map[string]any{"other_config": map[string]any{"k": "v"}}
	return p
}

// checkRefusedKeepsWhatItWas: a plugin refused after it ran still resolves its type, to calls
// that fail as Unavailable naming the plugin and why (not an unknown type), and its last
// other_config contribution stays in the merge.
func checkRefusedKeepsWhatItWas(t *testing.T, f *fixture, name string, reason ...string) {
	t.Helper()
	st := f.status(name)
	if st.State != StateRefused {
		t.Fatalf("state %s (%s), want refused", st.State, st.Reason)
	}
	t.Logf("reason: %s", st.Reason)
	for _, w := range append([]string{`plugin "` + name + `" refused`}, reason...) {
		if !strings.Contains(st.Reason, w) {
			t.Errorf("reason %q\nlacks %q", st.Reason, w)
		}
	}
	pp, owner, ok := f.h.PortProvider(name + "-port")
	if !ok || owner != name {
		t.Fatalf("type %s-port no longer resolves (ok %v, plugin %q): the daemon would answer \"unknown interface type\"", name, ok, owner)
	}
	_, err := pp.Attach(t.Context(), port(name, "late", nil))
	if code, msg := codeOf(err); code != api.Unavailable || !strings.Contains(msg, `plugin "`+name+`"`) || !strings.Contains(msg, "refused") {
		t.Errorf("Attach to the refused plugin: code %s, %q; want unavailable naming the plugin and the refusal", code, msg)
	}
	if got := f.h.GlobalConfig(t.Context(), nil).OtherConfig; got["k"] != "v" {
		t.Errorf("other_config after the refusal %v: the refused plugin's contribution k=v was pruned", got)
	}
}

// TestRefusedOnReloadStaysKnown (issue 14): a plugin whose new pin does not match is refused by
// the reload; its type answers Unavailable as after a refusal at a restart, and its
// other_config contribution is kept, as docs/plugins.md says.
func TestRefusedOnReloadStaysKnown(t *testing.T) {
	f := newFixture(t)
	p := f.contributing("pinned")
	h := f.start(p)
	if st := f.status("pinned"); st.State != StateRunning {
		t.Fatalf("state %s: %s", st.State, st.Reason)
	}
	if got := h.GlobalConfig(t.Context(), nil).OtherConfig; got["k"] != "v" {
		t.Fatalf("other_config %v, want k=v", got)
	}
	p.SHA256 = strings.Repeat("ab", 32)
	if err := h.Reload(t.Context(), []model.Plugin{p}); err != nil {
		t.Fatal(err)
	}
	checkRefusedKeepsWhatItWas(t, f, "pinned", "but the config pins "+strings.Repeat("ab", 32))
}

// TestTrustRecheckedOnReload (issue 14): the trust checks run again on reload, on plugins that
// keep running otherwise (same entry): a binary replaced, made writable by others, or below a
// directory made writable since the start is refused by that reload and its process stopped.
func TestTrustRecheckedOnReload(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(t *testing.T, f *fixture, bin string)
		want  string
	}{
		{"binary swapped", func(t *testing.T, f *fixture, bin string) {
			data, err := os.ReadFile(binaries["v2"])
			must(t, err)
			tmp := bin + ".new"
			must(t, os.WriteFile(tmp, data, 0o755))
			must(t, os.Rename(tmp, bin))
		}, "but the config pins"},
		{"binary made world-writable", func(t *testing.T, f *fixture, bin string) {
			must(t, os.Chmod(bin, 0o757))
		}, "is writable by group or others (mode 0757)"},
		{"plugin dir made group-writable", func(t *testing.T, f *fixture, bin string) {
			must(t, os.Chmod(f.pluginDir, 0o775))
		}, "is writable by group or others (mode 0775)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			p := f.contributing("trusty")
			h := f.start(p)
			st := f.status("trusty")
			if st.State != StateRunning {
				t.Fatalf("state %s: %s", st.State, st.Reason)
			}
			bin := filepath.Join(f.pluginDir, p.Path)
			tt.spoil(t, f, bin)
			if err := h.Reload(t.Context(), []model.Plugin{p}); err != nil {
				t.Fatal(err)
			}
			checkRefusedKeepsWhatItWas(t, f, "trusty", tt.want)
			f.waitFor("the old process's exit", func() bool { return syscall.Kill(st.PID, 0) != nil })
			if procs := processesOf(t, bin); len(procs) > 0 {
				t.Errorf("plugin processes %v after the refusal", procs)
			}
		})
	}
}

// TestInfoNameMismatchRefused (issue 14): a plugin whose Info.Name differs from its config
// entry's name is refused, with a reason naming both names and the fix, and its process ends.
func TestInfoNameMismatchRefused(t *testing.T) {
	f := newFixture(t)
	f.opts.Environ = append(f.opts.Environ, "TESTPLUGIN_INFO_NAME=other")
	p := f.install("v1", "named")
	p.Env = []string{"TESTPLUGIN_INFO_NAME"}
	f.start(p)
	st := f.status("named")
	if st.State != StateRefused {
		t.Fatalf("state %s (%s), want refused", st.State, st.Reason)
	}
	t.Logf("reason: %s", st.Reason)
	for _, w := range []string{`plugin "named" refused`, `Info.Name is "other"`, `names it "named"`, `rename the entry to "other"`, `Info.Name "named"`} {
		if !strings.Contains(st.Reason, w) {
			t.Errorf("reason %q\nlacks %q", st.Reason, w)
		}
	}
	if f.started("named") == nil {
		t.Fatal("the plugin never ran: the test does not test the name check")
	}
	f.waitFor("the refused process's exit", func() bool {
		return len(processesOf(t, filepath.Join(f.pluginDir, p.Path))) == 0
	})
	if _, _, ok := f.h.PortProvider("named-port"); ok {
		t.Error("the refused plugin's type resolves")
	}
}

// TestReplayFlag (issue 14): a first Attach reaches the plugin with Replay false; after its
// kill -9 the host's replay of the same port reaches the new process with Replay true, even
// though the daemon's Owned answer does not set it. A request carrying State is a replay too.
func TestReplayFlag(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var owned []api.PortRequest // what a daemon would have stored
	f.opts.Owned = func(context.Context, string) ([]api.PortRequest, error) {
		mu.Lock()
		defer mu.Unlock()
		return append([]api.PortRequest(nil), owned...), nil
	}
	p := f.install("v1", "replayer")
	f.start(p)
	pid1 := f.status("replayer").PID
	pp, _, ok := f.h.PortProvider("replayer-port")
	if !ok {
		t.Fatal("no provider")
	}
	req := port("replayer", "r1", nil)
	a, err := pp.Attach(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.State = a.State
	mu.Lock()
	owned = append(owned, req)
	mu.Unlock()
	if got := f.attaches("replayer", pid1); len(got) != 1 || got[0] != (attached{"br0/r1", false}) {
		t.Fatalf("first Attach seen by the plugin: %+v, want br0/r1 with Replay false", got)
	}
	must(t, syscall.Kill(pid1, syscall.SIGKILL))
	f.waitFor("the restart", func() bool {
		st := f.status("replayer")
		return st.State == StateRunning && st.PID != 0 && st.PID != pid1
	})
	pid2 := f.status("replayer").PID
	if got := f.attaches("replayer", pid2); len(got) != 1 || got[0] != (attached{"br0/r1", true}) {
		t.Fatalf("replay seen by the restarted plugin: %+v, want br0/r1 with Replay true", got)
	}
	// The daemon's re-apply of a port it attached before carries its State.
	if _, err := pp.Attach(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := f.attaches("replayer", pid2); len(got) != 2 || got[1] != (attached{"br0/r1", true}) {
		t.Errorf("Attach with State seen by the plugin: %+v, want Replay true", got)
	}
}
