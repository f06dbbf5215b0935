package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// binaries holds the test plugins TestMain builds: "v1" (protocol 1) and "v2" (protocol 2).
var binaries = map[string]string{}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hostbin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		for name, ldflags := range map[string]string{"v1": "", "v2": "-X main.protocolVersion=2"} {
			out := filepath.Join(dir, name)
			cmd := exec.Command("go", "build", "-ldflags="+ldflags, "-o", out, "./testdata/testplugin")
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "building the test plugin:", err)
				return 1
			}
			binaries[name] = out
		}
		return m.Run()
	}()
	os.Exit(code)
}

// fixture is a plugin dir, a data dir and the host under test.
type fixture struct {
	t         *testing.T
	pluginDir string
	dataDir   string
	logs      *testkit.LogBuffer
	opts      Options
	h         *Host
}

// newFixture makes the dirs (short paths: unix socket paths are limited) and the options; the
// host is created by start.
func newFixture(t *testing.T) *fixture {
	root, err := os.MkdirTemp("", "ph")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	f := &fixture{t: t, pluginDir: filepath.Join(root, "p"), dataDir: filepath.Join(root, "d"), logs: &testkit.LogBuffer{}}
	for _, d := range []string{f.pluginDir, f.dataDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.opts = Options{
		PluginDir:      f.pluginDir,
		DataDir:        f.dataDir,
		Logger:         slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Environ:        []string{"PATH=/usr/bin:/bin"},
		CallTimeout:    5 * time.Second,
		HealthInterval: 200 * time.Millisecond,
	}
	return f
}

// install copies a test plugin binary to the plugin dir as rel and returns the entry pinning it.
func (f *fixture) install(bin, name string) model.Plugin {
	f.t.Helper()
	data, err := os.ReadFile(binaries[bin])
	if err != nil {
		f.t.Fatal(err)
	}
	path := filepath.Join(f.pluginDir, name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		f.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return model.Plugin{Name: name, Path: name, SHA256: hex.EncodeToString(sum[:])}
}

// start creates the host and starts the plugins; Close runs at cleanup.
func (f *fixture) start(plugins ...model.Plugin) *Host {
	f.t.Helper()
	h, err := New(f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.h = h
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			f.t.Errorf("Close: %v", err)
		}
	})
	if err := h.Start(f.t.Context(), plugins); err != nil {
		f.t.Fatal(err)
	}
	return h
}

func (f *fixture) status(name string) Status {
	f.t.Helper()
	for _, s := range f.h.Plugins() {
		if s.Name == name {
			return s
		}
	}
	f.t.Fatalf("no plugin %q in %+v", name, f.h.Plugins())
	return Status{}
}

// waitFor polls cond until it holds; the bound is generous and only keeps a broken test from
// hanging (no timing is asserted here).
func (f *fixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s; plugins: %+v", what, f.h.Plugins())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// started returns the pids the plugin's process wrote to its marker file (nil: never ran).
func (f *fixture) started(name string) []int {
	data, err := os.ReadFile(filepath.Join(f.dataDir, "plugin-data", name, "started"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, l := range strings.Fields(string(data)) {
		n, _ := strconv.Atoi(l)
		pids = append(pids, n)
	}
	return pids
}

// attachLog returns the port names Attached by the process pid, in order.
func (f *fixture) attachLog(name string, pid int) []string {
	var out []string
	for _, a := range f.attaches(name, pid) {
		out = append(out, a.port)
	}
	return out
}

// attached is one Attach the test plugin logged: "bridge/port" and the request's Replay.
type attached struct {
	port   string
	replay bool
}

// attaches returns the Attaches the process pid logged, in order.
func (f *fixture) attaches(name string, pid int) []attached {
	data, _ := os.ReadFile(filepath.Join(f.dataDir, "plugin-data", name, "attach.log"))
	var out []attached
	for _, l := range strings.Split(string(data), "\n") {
		w := strings.Fields(l)
		if len(w) == 3 && w[0] == strconv.Itoa(pid) {
			out = append(out, attached{port: w[1], replay: w[2] == "replay=true"})
		}
	}
	return out
}

// processesOf lists the live processes running the executable at path.
func processesOf(t *testing.T, path string) []int {
	t.Helper()
	return testkit.PIDs(t, func(pid int) bool {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		return err == nil && strings.TrimSuffix(exe, " (deleted)") == path && !zombie(pid)
	})
}

func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

// codeOf returns the api code and message of err.
func codeOf(err error) (api.Code, string) {
	if err == nil {
		return api.OK, ""
	}
	return api.CodeOf(err), err.Error()
}

// port is a request for a port of the test plugin's type.
func port(plugin, name string, opts map[string]string) api.PortRequest {
	return api.PortRequest{Bridge: "br0", Name: name, Type: plugin + "-port", Options: opts}
}
