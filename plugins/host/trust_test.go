package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
)

// TestTrustRefusals: each broken installation is refused with a message naming the file and
// the fix, and no plugin process ever ran (the plugin writes a marker first thing, and no
// process runs the binary).
func TestTrustRefusals(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(f *fixture, p *model.Plugin)
		want  []string
	}{
		{"symlinked binary", func(f *fixture, p *model.Plugin) {
			real := filepath.Join(f.pluginDir, "real")
			must(t, os.Rename(filepath.Join(f.pluginDir, p.Path), real))
			must(t, os.Symlink(real, filepath.Join(f.pluginDir, p.Path)))
		}, []string{"is a symlink (to ", "copy the real file"}},
		{"symlinked directory", func(f *fixture, p *model.Plugin) {
			sub := filepath.Join(f.pluginDir, "realdir")
			must(t, os.Mkdir(sub, 0o755))
			must(t, os.Rename(filepath.Join(f.pluginDir, p.Path), filepath.Join(sub, p.Name)))
			must(t, os.Symlink(sub, filepath.Join(f.pluginDir, "linkdir")))
			p.Path = "linkdir/" + p.Name
		}, []string{"linkdir is a symlink", "symlinks are not followed"}},
		{"world-writable binary", func(f *fixture, p *model.Plugin) {
			must(t, os.Chmod(filepath.Join(f.pluginDir, p.Path), 0o757))
		}, []string{"is writable by group or others (mode 0757)", "chmod go-w"}},
		{"group-writable plugin dir", func(f *fixture, p *model.Plugin) {
			must(t, os.Chmod(f.pluginDir, 0o775))
		}, []string{f0(), "is writable by group or others (mode 0775)"}},
		{"wrong owner", func(f *fixture, p *model.Plugin) {
			must(t, os.Chown(filepath.Join(f.pluginDir, p.Path), 65534, 65534))
		}, []string{"is owned by uid 65534, neither root nor the daemon", "chown root"}},
		{"checksum mismatch", func(f *fixture, p *model.Plugin) {
			p.SHA256 = strings.Repeat("0", 64)
		}, []string{"but the config pins " + strings.Repeat("0", 64), "set the plugin's sha256 to"}},
		{"missing binary", func(f *fixture, p *model.Plugin) {
			p.Path = "nowhere"
		}, []string{"nowhere does not exist", "install the plugin binary there"}},
		{"not executable", func(f *fixture, p *model.Plugin) {
			must(t, os.Chmod(filepath.Join(f.pluginDir, p.Path), 0o644))
		}, []string{"is not executable by its owner", "chmod 0755"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			p := f.install("v1", "trusty")
			tt.spoil(f, &p)
			f.start(p)
			st := f.status("trusty")
			if st.State != StateRefused {
				t.Fatalf("state %s (%s), want refused", st.State, st.Reason)
			}
			t.Logf("reason: %s", st.Reason)
			for _, w := range append([]string{`plugin "trusty" refused`}, tt.want...) {
				w = strings.ReplaceAll(w, f0(), f.pluginDir)
				if !strings.Contains(st.Reason, w) {
					t.Errorf("reason %q\nlacks %q", st.Reason, w)
				}
			}
			if pids := f.started("trusty"); pids != nil {
				t.Errorf("the plugin ran (pids %v)", pids)
			}
			if procs := processesOf(t, filepath.Join(f.pluginDir, p.Path)); len(procs) > 0 {
				t.Errorf("plugin processes %v", procs)
			}
			if _, err := os.Stat(filepath.Join(f.dataDir, "plugin-data", "trusty")); err == nil {
				t.Errorf("a data dir was made for a refused plugin")
			}
			if _, _, ok := f.h.PortProvider("trusty-port"); ok {
				t.Errorf("a refused plugin's type resolves")
			}
		})
	}
}

// f0 stands for the fixture's plugin dir in the table above.
func f0() string { return "<plugin dir>" }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWrongProtocolVersion: a plugin serving only protocol 2 is refused, the message names
// both versions, and no process is left. go-plugin learns a plugin's version from its
// handshake, so this one process did run, briefly.
func TestWrongProtocolVersion(t *testing.T) {
	f := newFixture(t)
	p := f.install("v2", "future")
	f.start(p)
	st := f.status("future")
	if st.State != StateRefused {
		t.Fatalf("state %s (%s), want refused", st.State, st.Reason)
	}
	t.Logf("reason: %s", st.Reason)
	for _, w := range []string{`plugin "future" refused`, "plugin protocol version 2", "this host speaks version 1"} {
		if !strings.Contains(st.Reason, w) {
			t.Errorf("reason %q\nlacks %q", st.Reason, w)
		}
	}
	if procs := processesOf(t, filepath.Join(f.pluginDir, p.Path)); len(procs) > 0 {
		t.Errorf("plugin processes left: %v", procs)
	}
	entries, _ := os.ReadDir(filepath.Join(f.dataDir, "plugin-run"))
	if len(entries) > 0 {
		t.Errorf("socket dirs left: %v", entries)
	}
}
