package daemoncmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// serve runs the API server over a fake backend on a fresh unix socket; it returns the fake
// and the socket's address.
func serve(t testing.TB) (*apitest.Fake, string) {
	t.Helper()
	dir := testkit.ShortTempDir(t, "ovsplane-vsctl")
	addr := "unix:" + filepath.Join(dir, "ovsplaned.sock")
	fake := apitest.New()
	listening := make(chan struct{})
	srv := apiserver.New(fake, apiserver.Options{OnListen: func(string) { close(listening) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, config.API{Listen: []string{addr}}) }()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return fake, addr
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, env map[string]string, terminal bool, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := daemoncmd.Main(t.Context(), daemoncmd.Env{
		Args:           append([]string{"vsctl"}, args...),
		Getenv:         func(k string) string { return env[k] },
		Stdout:         &out,
		Stderr:         &errb,
		StderrTerminal: terminal,
	})
	return result{code, out.String(), errb.String()}
}

func TestHandles(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"vsctl", "status"}, true},
		{[]string{"vsctl", "--daemon=unix:/x", "status", "port/p1"}, true},
		{[]string{"vsctl", "apply", "-f", "x.yaml"}, true},
		{[]string{"vsctl", "--format=json", "apply"}, true},
		// Options whose value is the next argument (issue 14: --daemon ADDR).
		{[]string{"vsctl", "--daemon", "unix:/x", "plugin", "list"}, true},
		{[]string{"vsctl", "--format", "json", "--timeout", "3s", "status"}, true},
		{[]string{"vsctl", "--daemon", "unix:/x", "add-port", "br0", "p0"}, false},
		{[]string{"vsctl", "-f", "table", "list", "Bridge"}, false},
		{[]string{"vsctl", "show"}, false},
		{[]string{"vsctl", "--", "add-br", "status"}, false},
		{[]string{"vsctl", "add-port", "br0", "status"}, false},
		{[]string{"vsctl", "--db=unix:/x", "list-br"}, false},
		{[]string{"vsctl"}, false},
		{[]string{"vsctl", "--version"}, false},
		{nil, false},
	} {
		if got := daemoncmd.Handles(tc.args); got != tc.want {
			t.Errorf("Handles(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestStatus(t *testing.T) {
	fake, addr := serve(t)
	ctx := t.Context()
	if _, err := fake.ApplyBridge(ctx, model.Bridge{Name: "br0"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []model.Port{
		{Name: "p1", Interfaces: []model.Interface{{Name: "p1"}}},
		{Name: "bad", Interfaces: []model.Interface{{Name: "bad", Options: map[string]string{apitest.RefuseOption: "could not open network device bad (No such device)"}}}},
	} {
		if _, err := fake.ApplyPort(ctx, "br0", p); err != nil {
			t.Fatal(err)
		}
	}
	daemon := "--daemon=" + addr

	t.Run("ready objects", func(t *testing.T) {
		r := run(t, nil, false, daemon, "status", "port/p1", "br0")
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "OBJECT") || !strings.Contains(lines[0], "OFPORT") ||
			!strings.HasPrefix(lines[1], "bridge/br0") || !strings.HasPrefix(lines[2], "port/p1") || !strings.Contains(lines[2], "ready") {
			t.Errorf("table:\n%s", r.stdout)
		}
	})
	t.Run("all objects, one in error", func(t *testing.T) {
		r := run(t, nil, false, daemon, "status")
		if r.code != 1 {
			t.Errorf("exit %d, want 1 (interface/bad is in error)", r.code)
		}
		if !strings.Contains(r.stdout, "interface/bad") || !strings.Contains(r.stdout, "No such device") ||
			!strings.Contains(r.stdout, "interface/p1") {
			t.Errorf("table:\n%s", r.stdout)
		}
	})
	t.Run("pending", func(t *testing.T) {
		fake.SetPending("port/p1", true)
		defer fake.SetPending("port/p1", false)
		if r := run(t, nil, false, daemon, "status", "p1"); r.code != 1 || !strings.Contains(r.stdout, "pending") {
			t.Errorf("exit %d, stdout:\n%s", r.code, r.stdout)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := run(t, nil, false, daemon, "--format=json", "status", "interface/p1")
		var rows []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		if r.code != 0 || len(rows) != 1 || rows[0]["object"] != "interface/p1" || rows[0]["state"] != "ready" || rows[0]["ofport"] == nil {
			t.Errorf("exit %d, rows %v", r.code, rows)
		}
	})
	t.Run("watched statuses", func(t *testing.T) {
		fake.SetWatched([]model.WatchedStatus{
			{Plugin: "dsa", Interface: "p1", Bridge: "br0", Port: "p1", Owner: model.WatchedOwnerDaemon, Level: "info", Summary: "accelerated by wq0.1"},
			{Plugin: "dsa", Interface: "vhu-os", Bridge: "br-int", Port: "vhu-os", Owner: model.WatchedOwnerForeign, Level: "warning",
				Summary: "CPU copy: no DMA queue on NUMA 1", Details: map[string]string{"numa": "1"}},
		})
		defer fake.SetWatched(nil)
		r := run(t, nil, false, daemon, "status", "br0", "p1")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		// bridge, port and interface p1, a blank line, the watched header and p1's status.
		if r.code != 0 || len(lines) != 7 || lines[4] != "" || !strings.HasPrefix(lines[5], "PLUGIN") ||
			!strings.Contains(lines[6], "dsa") || !strings.Contains(lines[6], "accelerated by wq0.1") || strings.Contains(r.stdout, "vhu-os") {
			t.Errorf("exit %d, stdout:\n%s", r.code, r.stdout)
		}
		// A foreign interface has no managed status, only the plugin's: named, it matches.
		r = run(t, nil, false, daemon, "status", "vhu-os")
		if r.code != 0 || !strings.Contains(r.stdout, "warning") || !strings.Contains(r.stdout, "CPU copy: no DMA queue on NUMA 1") || r.stderr != "" {
			t.Errorf("status vhu-os: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
		}
		r = run(t, nil, false, daemon, "--format=json", "status", "interface/vhu-os", "interface/p1")
		var rows []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		if r.code != 0 || len(rows) != 3 || rows[0]["state"] != "ready" || rows[1]["kind"] != "watched" || rows[2]["object"] != "interface/vhu-os" ||
			rows[2]["level"] != "warning" || rows[2]["owner"] != "foreign" || rows[2]["plugin"] != "dsa" || rows[2]["state"] != nil {
			t.Errorf("exit %d, rows %v", r.code, rows)
		}
		if d, _ := rows[2]["details"].(map[string]any); d["numa"] != "1" {
			t.Errorf("details %v", rows[2]["details"])
		}
	})
	t.Run("unknown object", func(t *testing.T) {
		r := run(t, nil, false, daemon, "status", "port/nope")
		if r.code != 1 || !strings.Contains(r.stderr, `"port/nope" is not an object ovsplaned manages`) {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("address from the environment", func(t *testing.T) {
		if r := run(t, map[string]string{"OVSPLANE_API": addr}, false, "status", "br0"); r.code != 0 {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("usage", func(t *testing.T) {
		if r := run(t, nil, false, daemon, "--format=xml", "status"); r.code != 2 || !strings.Contains(r.stderr, "--format=xml") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
		if r := run(t, nil, false, "status", "--help"); r.code != 0 || !strings.Contains(r.stdout, "apply -f FILE") {
			t.Errorf("--help: exit %d, stdout %q", r.code, r.stdout)
		}
	})
}

func TestDaemonNotRunning(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ovsplaned.sock")
	for _, cmd := range [][]string{{"status"}, {"apply", "-f", writeFile(t, "bridges:\n  - name: br0\n")}} {
		r := run(t, map[string]string{"OVSPLANE_API": "unix:" + sock}, false, cmd...)
		if r.code != 1 || !strings.Contains(r.stderr, sock) || !strings.Contains(r.stderr, "is ovsplaned running?") ||
			!strings.Contains(r.stderr, "systemctl start ovsplaned") {
			t.Errorf("%s with no daemon: exit %d, stderr %q", cmd[0], r.code, r.stderr)
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "desired.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// desired returns an apply file: bridges br0 and br1, n ports each, the ports of br1 named
// in refuse refused by the simulated ovs-vswitchd.
func desired(n int, refuse ...string) string {
	var b strings.Builder
	b.WriteString("bridges:\n")
	for _, br := range []string{"br0", "br1"} {
		fmt.Fprintf(&b, "  - name: %s\n    datapath_type: netdev\n    ports:\n", br)
		for i := range n {
			name := fmt.Sprintf("%s-p%d", br, i)
			fmt.Fprintf(&b, "      - name: %s\n        tag: %d\n        interfaces:\n          - name: %s\n            type: internal\n", name, i%4095, name)
			for _, r := range refuse {
				if r == name {
					fmt.Fprintf(&b, "            options: {%s: \"could not open network device %s (No such device)\"}\n", apitest.RefuseOption, name)
				}
			}
		}
	}
	return b.String()
}

func TestApply(t *testing.T) {
	fake, addr := serve(t)
	fake.SetApplyDelay(20 * time.Millisecond)
	file := writeFile(t, desired(150, "br1-p7", "br1-p70"))
	r := run(t, nil, true, "--daemon="+addr, "apply", "-f", file)
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (two ports refused)", r.code)
	}
	if !strings.Contains(r.stdout, "applied 2 bridge(s) and 300 port(s)") || !strings.Contains(r.stdout, "298 ready, 0 pending, 2 failed") {
		t.Errorf("summary: %q", r.stdout)
	}
	for _, p := range []string{"br1-p7", "br1-p70"} {
		if !strings.Contains(r.stderr, "apply: port/"+p+": ") || !strings.Contains(r.stderr, "could not open network device "+p) {
			t.Errorf("failure of %s not listed; stderr:\n%s", p, r.stderr)
		}
	}
	// The bar (schollz/progressbar) counts the ports and is erased before the failures are
	// listed: its last drawing is followed by blanks and a carriage return.
	lastBar := strings.LastIndex(r.stderr, "\rports ")
	if lastBar < 0 || !strings.Contains(r.stderr, "/300, ") {
		t.Errorf("no progress bar on a terminal stderr: %q", r.stderr)
	} else if rest, _, _ := strings.Cut(r.stderr[lastBar+1:], "vsctl: apply:"); !regexp.MustCompile(`\r +\r$`).MatchString(rest) {
		t.Errorf("the progress bar is not erased before the failures: %q", rest)
	}
	if got := len(fake.Ports("")); got != 300 {
		t.Errorf("fake holds %d ports, want 300", got)
	}
	if b, err := fake.Bridge("br1"); err != nil || b.Spec.DatapathType != "netdev" || b.Spec.Ports != nil {
		t.Errorf("bridge br1 = %+v, %v", b, err)
	}
	if p, err := fake.Port("br0-p3"); err != nil || p.Bridge != "br0" || p.Spec.Tag == nil || *p.Spec.Tag != 3 {
		t.Errorf("port br0-p3 = %+v, %v", p, err)
	}
	if m := fake.MaxConcurrentApplyPort(); m < 8 || m > 64 {
		t.Errorf("at most %d ApplyPort calls in flight, want concurrency bounded by 64 (and more than a few)", m)
	}

	t.Run("all ready, not a terminal", func(t *testing.T) {
		r := run(t, nil, false, "--daemon="+addr, "--jobs=4", "apply", "-f", writeFile(t, desired(5)))
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "10 ready, 0 pending, 0 failed") {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("bridge refused", func(t *testing.T) {
		fake.AddConfigBridge(model.Bridge{Name: "brc"})
		f := writeFile(t, "bridges:\n  - name: brc\n    ports:\n      - name: c1\n        interfaces: [{name: c1}]\n")
		r := run(t, nil, false, "--daemon="+addr, "apply", "-f", f)
		if r.code != 1 || !strings.Contains(r.stderr, "bridge/brc: bridge \"brc\" comes from the config file") ||
			!strings.Contains(r.stderr, "port/c1: not applied: its bridge brc failed") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// apply -f carries a port's vlan_mode and lacp to the daemon; a value OVS does not know is
// refused before anything is sent, naming the key.
func TestApplyCarriesVLANModeAndLACP(t *testing.T) {
	fake, addr := serve(t)
	f := writeFile(t, "bridges:\n  - name: br0\n    ports:\n"+
		"      - {name: bond0, tag: 10, trunks: [20], vlan_mode: native-tagged, bond_mode: balance-tcp, lacp: active,\n"+
		"         interfaces: [{name: e1, type: internal}, {name: e2, type: internal}]}\n")
	if r := run(t, nil, false, "--daemon="+addr, "apply", "-f", f); r.code != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if p, err := fake.Port("bond0"); err != nil || p.Spec.VLANMode != "native-tagged" || p.Spec.LACP != "active" {
		t.Errorf("port bond0 = %+v, %v; want vlan_mode native-tagged, lacp active", p, err)
	}
	bad := writeFile(t, "bridges:\n  - name: br1\n    ports:\n      - {name: p1, lacp: fast, interfaces: [{name: p1}]}\n")
	r := run(t, nil, false, "--daemon="+addr, "apply", "-f", bad)
	if want := `bridges[0].ports[0].lacp: unknown LACP mode "fast"`; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if _, err := fake.Bridge("br1"); err == nil {
		t.Error("an invalid file applied bridge br1")
	}
}

func TestApplyRejectsInvalidFiles(t *testing.T) {
	fake, addr := serve(t)
	for _, tc := range []struct{ name, content, want string }{
		{"loader's messages", "bridges:\n  - name: br0\n    ports:\n      - name: p1\n", "bridges[0].ports[0].interfaces: at least one interface required"},
		{"several problems", "bridges:\n  - name: br0\n    fail_mode: loud\n  - name: br0\n", "duplicate bridge name \"br0\""},
		{"settings", "bridges:\n  - name: br0\napi:\n  listen: [\"unix:/x\"]\n", "api: not part of what apply sends"},
		{"not YAML", "bridges: [\n", "parsing YAML"},
		{"empty", "", "no bridges to apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, false, "--daemon="+addr, "apply", "-f", writeFile(t, tc.content))
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, tc.want)
			}
		})
	}
	if len(fake.Bridges()) != 0 {
		t.Errorf("invalid files applied bridges: %v", fake.Bridges())
	}
	if r := run(t, nil, false, "--daemon="+addr, "apply"); r.code != 2 || !strings.Contains(r.stderr, "-f FILE is required") {
		t.Errorf("apply without -f: exit %d, stderr %q", r.code, r.stderr)
	}
}
