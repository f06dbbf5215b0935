package vdpaplugin

import (
	"encoding/json"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/vdpa"
)

// TestInfo: the plugin announces the port type with a schema listing exactly the library's
// options (pf required), the dpdk-vdpa job type, the capabilities it serves, and a watch on dpdk
// and dpdkvdpa rows.
func TestInfo(t *testing.T) {
	conn := sdktest.Connect(t, New(Options{Logger: testkit.Logger(t, slog.LevelDebug)}))
	info := conn.Info
	if info.Name != Name || len(info.Types) != 2 || info.Types[0].Name != PortType || info.Types[0].Kind != api.ObjectKindPort ||
		info.Types[1].Name != JobType || info.Types[1].Kind != api.ObjectKindJob || !json.Valid([]byte(info.Types[1].OptionsSchema)) {
		t.Fatalf("info %+v", info)
	}
	want := []api.Capability{api.CapabilityPortProvider, api.CapabilityWatcher, api.CapabilityGlobalConfig, api.CapabilityDataPath}
	for _, c := range want {
		if !slices.Contains(info.Capabilities, c) {
			t.Errorf("capabilities %v lack %s", info.Capabilities, c)
		}
	}
	if !slices.Equal(info.Watch.InterfaceTypes, watchedTypes) {
		t.Errorf("watch %+v", info.Watch)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal([]byte(info.Types[0].OptionsSchema), &schema); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(schema.Properties)), slices.Sorted(slices.Values(vdpa.OptionKeys)); !slices.Equal(got, want) {
		t.Errorf("schema options %v, library options %v", got, want)
	}
	if !slices.Equal(schema.Required, []string{"pf"}) {
		t.Errorf("required %v", schema.Required)
	}
}

// TestConfigure: bad configurations are refused with a problem per field (and the previous
// one stays); calls before the first Configure fail with FailedPrecondition; hw_offload
// decides the contribution.
func TestConfigure(t *testing.T) {
	k := bootKernel(t, loadFixture(t, "cx6dx-switchdev", nil))
	h := sdktest.NewFakeHost(t, newPlugin(t, k))
	if _, err := h.Conn().PortProvider.Attach(t.Context(), vdpaPort("vm1")); api.CodeOf(err) != api.FailedPrecondition {
		t.Errorf("attach before configure: %v", err)
	}
	for cfg, field := range map[string]string{
		`{"root": "sys"}`:                            "config.root",
		`{"root": "/nonexistent/ovsplane"}`:          "config.root",
		`{"simulate": "cx6dx.fixture"}`:              "config.simulate",
		`{"simulate": "/a.fixture", "root": "/tmp"}`: "config.root",
		`{"hw_offload": "yes"}`:                      "config.hw_offload",
		`{"rooot": "/"}`:                             "config.rooot",
		`{"dpdk_vdpa": "dpdk-vdpa"}`:                 "config.dpdk_vdpa",
		`{"dpdk_vdpa": "/nonexistent/dpdk-vdpa"}`:    "config.dpdk_vdpa",
		`{"dpdk_vdpa": "/usr/bin/../bin/true"}`:      "config.dpdk_vdpa",
	} {
		err := h.Configure([]byte(cfg))
		var e *api.Error
		if api.CodeOf(err) != api.InvalidArgument || !asAPI(err, &e) || !slices.ContainsFunc(e.Problems, func(p api.Problem) bool { return p.Field == field }) {
			t.Errorf("%s: %v, want a problem on %s", cfg, err, field)
		}
	}
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	if gc, err := h.Contribute(); err != nil || gc.OtherConfig["hw-offload"] != "true" {
		t.Errorf("contribution %+v, %v; want hw-offload=true", gc, err)
	}
	if err := h.Configure([]byte(`{"hw_offload": false}`)); err != nil {
		t.Fatal(err)
	}
	if gc, err := h.Contribute(); err != nil || len(gc.OtherConfig) != 0 {
		t.Errorf("contribution with hw_offload false: %+v, %v", gc, err)
	}
	a, err := h.Attach(vdpaPort("vm1", "vf", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Status, "plugin config hw_offload is false") {
		t.Errorf("status %q", a.Status)
	}
}

// TestSimulateMode: with simulate naming a fixture file the plugin builds its own fake kernel
// (the real OpenKernel), says so in health and every status, attaches and detaches; a missing
// fixture is refused on config.simulate.
func TestSimulateMode(t *testing.T) {
	h := sdktest.NewFakeHost(t, New(Options{Logger: testkit.Logger(t, slog.LevelDebug)}))
	if err := h.Configure([]byte(`{"simulate": "/nonexistent/host.fixture"}`)); api.CodeOf(err) != api.InvalidArgument ||
		!strings.Contains(err.Error(), "config.simulate") {
		t.Errorf("missing fixture: %v", err)
	}
	file, err := filepath.Abs(filepath.Join(testdata, "cx6dx-switchdev.fixture"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Configure([]byte(`{"simulate": "` + file + `"}`)); err != nil {
		t.Fatal(err)
	}
	a, err := h.Attach(vdpaPort("vm1", "vf", "1", "mac", "02:11:22:33:44:55"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Status, "SIMULATED (fixture "+file) || a.Endpoints["vhost-vdpa"] != "/dev/vhost-vdpa-0" {
		t.Errorf("attachment %+v", a)
	}
	if health, err := h.Health(); err != nil || !strings.Contains(health.Message, "SIMULATION") || !strings.Contains(health.Message, "1 vdpa ports") {
		t.Errorf("health %+v, %v", health, err)
	}
	// A reload with the same machine keeps the simulated kernel, and so the port.
	if err := h.Configure([]byte(`{"simulate": "` + file + `", "hw_offload": false}`)); err != nil {
		t.Fatal(err)
	}
	if a2, err := h.Attach(vdpaPort("vm1", "vf", "1", "mac", "02:11:22:33:44:55")); err != nil || string(a2.State) != string(a.State) {
		t.Errorf("attach after reload: %v", err)
	}
	if err := h.Detach("br0", "vm1"); err != nil {
		t.Fatal(err)
	}
}

// TestClosedPluginRefuses: after Close, calls fail cleanly (Unavailable) instead of crashing.
func TestClosedPluginRefuses(t *testing.T) {
	k := bootKernel(t, loadFixture(t, "cx6dx-switchdev", nil))
	p := newPlugin(t, k)
	h := sdktest.NewFakeHost(t, p)
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := h.Attach(vdpaPort("vm1", "vf", "1")); api.CodeOf(err) != api.Unavailable {
		t.Errorf("attach after close: %v", err)
	}
	if health, err := h.Health(); err != nil || health.State != api.HealthFailing {
		t.Errorf("health after close: %+v %v", health, err)
	}
}
