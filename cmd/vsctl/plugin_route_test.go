package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/test/lab"
)

// pluginDaemon is a real ovsplaned with the plugin host's test plugin (plugins/host/testdata/
// testplugin) configured as "lab", which provides interface type "lab-port" and contributes
// other_config:ovsplane-test-key=kept, on a lab OVSDB with a dummy ovs-vswitchd. Its data dir
// is not the default one, as in a plugin author's development loop.
type pluginDaemon struct {
	db   *lab.OVSDB
	dir  string
	conf string
	sock string
	proc *testkit.Proc
	sum  string
}

const pluginConfig = `
plugin_dir: %s
plugins:
  - name: lab
    path: ovsplane-plugin-lab
    sha256: %s
    config: {other_config: {ovsplane-test-key: kept}}
bridges:
  - name: br0
    datapath_type: netdev
%s`

func startPluginDaemon(t *testing.T) *pluginDaemon {
	t.Helper()
	lab.Require(t, lab.NeedRoot, lab.NeedOVS)
	d := &pluginDaemon{db: lab.StartOVSDB(t), dir: testkit.ShortTempDir(t, "vpd-")}
	d.db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	pdir := filepath.Join(d.dir, "plugins")
	d.sum = testkit.InstallPlugin(t, "../../plugins/host/testdata/testplugin", pdir, "ovsplane-plugin-lab")
	d.conf = filepath.Join(d.dir, "ovsplaned.yaml")
	d.sock = filepath.Join(d.dir, model.SocketName)
	d.writeConfig(t, d.sum, "")
	d.proc = testkit.Start(t, exec.Command(testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/ovsplaned"),
		"--config", d.conf, "--data-dir", d.dir, "--ovsdb-endpoints", d.db.Endpoint, "--log-level", "info"))
	t.Cleanup(func() {
		d.proc.Kill()
		if t.Failed() {
			t.Logf("ovsplaned log (tail):\n%s", d.proc.Out.Tail(4000))
		}
	})
	testkit.EventuallyTrue(t, 60*time.Second, 50*time.Millisecond, "ovsplaned serving with plugin lab running", func() bool {
		return d.proc.Exited() || d.api(t, "ListPlugins", `{}`).ok() && strings.Contains(d.api(t, "ListPlugins", `{}`).body, "RUNNING")
	})
	if d.proc.Exited() {
		t.Fatalf("ovsplaned exited at start:\n%s", d.proc.Out)
	}
	return d
}

// writeConfig writes the config file with the plugin's pin and, unless empty, one internal
// port named port on br0.
func (d *pluginDaemon) writeConfig(t *testing.T, pin, port string) {
	t.Helper()
	ports := ""
	if port != "" {
		ports = fmt.Sprintf("    ports:\n      - name: %s\n        interfaces:\n          - {name: %s, type: internal}\n", port, port)
	}
	if err := os.WriteFile(d.conf, fmt.Appendf(nil, pluginConfig, filepath.Join(d.dir, "plugins"), pin, ports), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pluginPID returns the pid of plugin lab while it is running, else 0.
func (d *pluginDaemon) pluginPID(t *testing.T) int {
	t.Helper()
	var resp struct {
		Plugins []struct {
			Name  string `json:"name"`
			State string `json:"state"`
			PID   int    `json:"pid"`
		} `json:"plugins"`
	}
	a := d.api(t, "ListPlugins", `{}`)
	if !a.ok() || json.Unmarshal([]byte(a.body), &resp) != nil {
		return 0
	}
	for _, p := range resp.Plugins {
		if p.Name == "lab" && p.State == "PLUGIN_STATE_RUNNING" {
			return p.PID
		}
	}
	return 0
}

// attaches returns the Attaches of port ("bridge/name") the plugin logged (its data dir's
// attach.log), each as "PID replay=BOOL", in order.
func (d *pluginDaemon) attaches(t *testing.T, port string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(d.dir, "plugin-data", "lab", "attach.log"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if w := strings.Fields(l); len(w) == 3 && w[1] == port {
			out = append(out, w[0]+" "+w[2])
		}
	}
	return out
}

type apiAnswer struct {
	status int
	body   string
}

func (a apiAnswer) ok() bool { return a.status == http.StatusOK }

// api calls one procedure of the daemon's API in the Connect protocol's JSON form.
func (d *pluginDaemon) api(t *testing.T, procedure, body string) apiAnswer {
	t.Helper()
	hc := http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", d.sock)
	}}}
	resp, err := hc.Post("http://localhost/ovsplane.v1.SwitchService/"+procedure, "application/json", strings.NewReader(body))
	if err != nil {
		return apiAnswer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return apiAnswer{resp.StatusCode, string(b)}
}

// vsctlRun runs the vsctl binary with args, without $OVSPLANE_API, and returns its exit
// status and output.
func vsctlRun(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OVSPLANE_API=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("vsctl %q: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// hasInterface reports whether OVSDB holds an Interface row named name.
func hasInterface(t *testing.T, db *lab.OVSDB, name string) bool {
	t.Helper()
	return db.Vsctl(t, "--bare", "--columns=name", "find", "Interface", "name="+name) != ""
}

// otherConfig returns Open_vSwitch other_config:key, "" when it is not set.
func otherConfig(t *testing.T, db *lab.OVSDB, key string) string {
	t.Helper()
	return strings.Trim(db.Vsctl(t, "--if-exists", "get", "Open_vSwitch", ".", "other_config:"+key), `"`)
}

// TestPluginPortRouting (issue 14): what a plugin author ran into with vsctl and a daemon
// running with its own data dir. Each step runs the real vsctl binary against a real
// ovsplaned, its real plugin process and a real ovsdb-server/ovs-vswitchd.
func TestPluginPortRouting(t *testing.T) {
	if _, err := os.Stat(strings.TrimPrefix(model.DefaultAPIAddr(), "unix:")); err == nil {
		t.Skipf("an ovsplaned socket exists at %s: vsctl would find that daemon by default", model.DefaultAPIAddr())
	}
	bin := buildVsctl(t)
	d := startPluginDaemon(t)
	dbArg, daemonArg := "--db="+d.db.Endpoint, "--daemon=unix:"+d.sock

	t.Run("plugin type without a daemon is refused, nothing written", func(t *testing.T) {
		code, _, stderr := vsctlRun(t, bin, dbArg, "add-port", "br0", "pa", "--", "set", "Interface", "pa", "type=lab-port")
		if code != 1 || !strings.Contains(stderr, `interface type "lab-port" is not an Open vSwitch type`) ||
			!strings.Contains(stderr, "--daemon=") || !strings.Contains(stderr, "nothing was written") {
			t.Errorf("exit %d, stderr %q; want 1 and the refusal naming the type and --daemon", code, stderr)
		}
		if hasInterface(t, d.db, "pa") {
			t.Error("an Interface row pa of type lab-port was written")
		}
	})
	t.Run("--daemon routes the add-port", func(t *testing.T) {
		code, _, stderr := vsctlRun(t, bin, dbArg, daemonArg, "add-port", "br0", "pb", "--", "set", "Interface", "pb", "type=lab-port")
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if got := d.db.Get(t, "Port", "pb", "external_ids:ovsplane-plugin"); got != "lab" {
			t.Errorf("Port pb external_ids:ovsplane-plugin = %q, want lab (the daemon's port)", got)
		}
	})
	t.Run("--daemon ADDR on a daemon command", func(t *testing.T) {
		code, stdout, stderr := vsctlRun(t, bin, "--daemon", "unix:"+d.sock, "plugin", "status", "lab")
		if code != 0 || !strings.Contains(stdout, "running") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
	t.Run("--daemon on an ovs-vsctl line is ignored", func(t *testing.T) {
		code, _, stderr := vsctlRun(t, bin, dbArg, daemonArg, "add-port", "br0", "pc", "--", "set", "Interface", "pc", "type=internal")
		if code != 0 || !hasInterface(t, d.db, "pc") {
			t.Errorf("exit %d, stderr %q; want the internal port written by vsctl", code, stderr)
		}
	})

	t.Run("replay flag after kill -9", func(t *testing.T) {
		pid1 := d.pluginPID(t)
		if got := d.attaches(t, "br0/pb"); len(got) != 1 || got[0] != fmt.Sprintf("%d replay=false", pid1) {
			t.Fatalf("Attaches of pb seen by the plugin: %q, want one by pid %d with Replay false", got, pid1)
		}
		if err := syscall.Kill(pid1, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var pid2 int
		testkit.EventuallyTrue(t, 30*time.Second, 20*time.Millisecond, "the plugin's restart", func() bool {
			pid2 = d.pluginPID(t)
			return pid2 != 0 && pid2 != pid1
		})
		if got := d.attaches(t, "br0/pb"); len(got) != 2 || got[1] != fmt.Sprintf("%d replay=true", pid2) {
			t.Errorf("Attaches of pb seen by the plugin: %q, want the replay by pid %d with Replay true", got, pid2)
		}
	})

	// A reload that refuses the plugin (its pin no longer matches): the type answers
	// unavailable, naming the refusal, and the plugin's other_config key stays.
	testkit.EventuallyTrue(t, 30*time.Second, 20*time.Millisecond, "the plugin's other_config key written", func() bool {
		return otherConfig(t, d.db, "ovsplane-test-key") == "kept"
	})
	d.writeConfig(t, strings.Repeat("ab", 32), "")
	if a := d.api(t, "Reload", `{}`); !a.ok() {
		t.Fatalf("Reload: %d %s", a.status, a.body)
	}
	// A barrier: a second reload adds a configuration port. Its desired state carries the
	// other_config the first reload left, so once the reconciler has written the port it has
	// written that other_config too.
	d.writeConfig(t, strings.Repeat("ab", 32), "cz")
	if a := d.api(t, "Reload", `{}`); !a.ok() {
		t.Fatalf("second Reload: %d %s", a.status, a.body)
	}
	testkit.EventuallyTrue(t, 30*time.Second, 20*time.Millisecond, "the configuration port cz written", func() bool {
		return hasInterface(t, d.db, "cz")
	})
	t.Run("refused on reload: unavailable, not unknown", func(t *testing.T) {
		code, _, stderr := vsctlRun(t, bin, dbArg, daemonArg, "add-port", "br0", "pd", "--", "set", "Interface", "pd", "type=lab-port")
		if code != 1 || strings.Contains(stderr, "unknown interface type") || !strings.Contains(stderr, `plugin "lab"`) || !strings.Contains(stderr, "refused") {
			t.Errorf("exit %d, stderr %q; want 1 naming plugin lab and its refusal", code, stderr)
		}
		if hasInterface(t, d.db, "pd") {
			t.Error("pd was written")
		}
	})
	t.Run("refused on reload: other_config kept", func(t *testing.T) {
		if got := otherConfig(t, d.db, "ovsplane-test-key"); got != "kept" {
			t.Errorf("other_config:ovsplane-test-key = %q after the plugin's refusal, want kept", got)
		}
	})
}

// TestTypeOfTheRunningOVS (issue 14): a type outside vsctl's stock list that the running Open
// vSwitch lists in Open_vSwitch.iface_types (a newer version's) is written as ovs-vsctl
// writes it, with no daemon; one it does not list is refused and not written.
func TestTypeOfTheRunningOVS(t *testing.T) {
	if _, err := os.Stat(strings.TrimPrefix(model.DefaultAPIAddr(), "unix:")); err == nil {
		t.Skipf("an ovsplaned socket exists at %s: vsctl would find that daemon by default", model.DefaultAPIAddr())
	}
	bin := buildVsctl(t)
	db := lab.StartOVSDB(t)
	// What an ovs-vswitchd with a type vsctl does not know would report.
	db.Vsctl(t, "--no-wait", "add-br", "br0", "--", "set", "Open_vSwitch", ".", "iface_types=[system,internal,srv9]")
	dbArg := "--db=" + db.Endpoint
	code, _, stderr := vsctlRun(t, bin, dbArg, "--no-wait", "add-port", "br0", "n0", "--", "set", "Interface", "n0", "type=srv9")
	if code != 0 || db.Get(t, "Interface", "n0", "type") != "srv9" {
		t.Errorf("type srv9 of the running OVS: exit %d, stderr %q; want the row written", code, stderr)
	}
	code, _, stderr = vsctlRun(t, bin, dbArg, "--no-wait", "add-port", "br0", "n1", "--", "set", "Interface", "n1", "type=srv10")
	if code != 1 || !strings.Contains(stderr, `interface type "srv10" is not an Open vSwitch type`) || hasInterface(t, db, "n1") {
		t.Errorf("type srv10 the running OVS lacks: exit %d, stderr %q; want refused, nothing written", code, stderr)
	}
}
