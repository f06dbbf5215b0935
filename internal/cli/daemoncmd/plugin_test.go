package daemoncmd_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/model"
)

var testPlugins = []model.PluginInfo{
	{Name: "veth", Version: "0.1.0", State: "running", Types: []string{"veth"},
		Capabilities: []string{"port_provider", "watcher"}, Restarts: 2, LastError: "plugin \"veth\" exited: signal: killed", PID: 4242},
	{Name: "dsa", State: "refused", Reason: "sha256 of ovsplane-plugin-dsa does not match its pin"},
	{Name: "stripe", Version: "1.0.0", State: "failed", Types: []string{"stripe", "stripe-stats"},
		Reason: "circuit breaker open: 5 failures within 1m0s", Restarts: 5, LastError: "exit status 2"},
}

func TestPluginList(t *testing.T) {
	fake, addr := serve(t)
	t.Run("none", func(t *testing.T) {
		r := run(t, nil, false, "--daemon="+addr, "plugin", "list")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "NAME  VERSION  STATE  TYPES  RESTARTS" {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	fake.SetPlugins(testPlugins)
	t.Run("table", func(t *testing.T) {
		r := run(t, map[string]string{"OVSPLANE_API": addr}, false, "plugin", "list")
		want := "" +
			"NAME    VERSION  STATE    TYPES                RESTARTS\n" +
			"dsa     -        refused  -                    0\n" +
			"stripe  1.0.0    failed   stripe,stripe-stats  5\n" +
			"veth    0.1.0    running  veth                 2\n"
		if r.code != 0 || r.stdout != want {
			t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", r.code, r.stderr, r.stdout, want)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := run(t, nil, false, "--daemon="+addr, "--format=json", "plugin", "list")
		var got []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 || len(got) != 3 {
			t.Fatalf("exit %d, stdout %q: %v", r.code, r.stdout, err)
		}
		if got[2]["name"] != "veth" || got[2]["state"] != "running" || got[2]["pid"] != 4242.0 {
			t.Errorf("veth = %v", got[2])
		}
	})
}

func TestPluginStatus(t *testing.T) {
	fake, addr := serve(t)
	fake.SetPlugins(testPlugins)
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		stdout   []string // each must appear
		stderr   string
		noStdout []string
	}{
		{name: "running plugin", args: []string{"veth"}, code: 0,
			stdout: []string{"veth\n", "  state:        running\n", "  version:      0.1.0\n", "  types:        veth\n",
				"  capabilities: port_provider, watcher\n", "  pid:          4242\n", "  restarts:     2\n",
				"  last error:   plugin \"veth\" exited: signal: killed\n"},
			noStdout: []string{"reason", "dsa"}},
		{name: "refused plugin", args: []string{"dsa"}, code: 1,
			stdout:   []string{"dsa\n", "  state:        refused\n", "  reason:       sha256 of ovsplane-plugin-dsa does not match its pin\n", "  restarts:     0\n"},
			noStdout: []string{"pid", "version"}},
		{name: "failed plugin", args: []string{"stripe"}, code: 1,
			stdout: []string{"state:        failed", "reason:       circuit breaker open", "last error:   exit status 2", "types:        stripe, stripe-stats"}},
		{name: "unknown plugin", args: []string{"nope"}, code: 1,
			stderr: `vsctl: plugin status: no plugin named "nope" in ovsplaned's config`},
		{name: "all, some not running", args: nil, code: 1, stdout: []string{"dsa\n", "\nstripe\n", "\nveth\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, false, append([]string{"--daemon=" + addr, "plugin", "status"}, tc.args...)...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tc.noStdout {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", r.stderr, tc.stderr)
			}
		})
	}
	t.Run("all running", func(t *testing.T) {
		fake.SetPlugins(testPlugins[:1])
		defer fake.SetPlugins(testPlugins)
		if r := run(t, nil, false, "--daemon="+addr, "plugin", "status"); r.code != 0 {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

func TestPluginUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"plugin"}, "vsctl: plugin: expected list, status or stats"},
		{[]string{"plugin", "restart"}, `vsctl: plugin: "restart": expected list, status or stats`},
		{[]string{"plugin", "stats"}, "vsctl: plugin: stats: expected one plugin name"},
		{[]string{"plugin", "list", "x"}, "vsctl: plugin: list: too many arguments"},
		{[]string{"plugin", "status", "a", "b"}, "vsctl: plugin: status: too many arguments"},
	} {
		r := run(t, map[string]string{"OVSPLANE_API": "unix:/nonexistent/ovsplaned.sock"}, false, tc.args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q", tc.args, r.code, r.stderr, tc.msg)
		}
	}
	if !daemoncmd.Handles([]string{"vsctl", "--daemon=unix:/x", "plugin", "list"}) {
		t.Error("Handles(plugin list) = false")
	}
	if r := run(t, nil, false, "--help"); !strings.Contains(r.stdout, "plugin status [NAME]") {
		t.Errorf("--help lacks plugin status: %q", r.stdout)
	}
}

func TestPluginDaemonNotRunning(t *testing.T) {
	r := run(t, map[string]string{"OVSPLANE_API": "unix:/nonexistent/ovsplaned.sock"}, false, "plugin", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "is ovsplaned running?") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
