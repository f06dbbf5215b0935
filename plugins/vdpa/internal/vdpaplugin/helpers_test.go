package vdpaplugin

import (
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
	"github.com/ovsplane/ovsplane/vdpa/simkernel"
)

const pf0 = "0000:65:00.0"

// testdata is the vdpa library's fixture directory.
var testdata = filepath.Join("..", "..", "..", "..", "vdpa", "testdata")

// loadFixture loads vdpa/testdata/<name>.fixture and applies edit (when not nil).
func loadFixture(t *testing.T, name string, edit func(*simhost.Fixture)) *simhost.Fixture {
	t.Helper()
	f, err := simhost.Load(filepath.Join(testdata, name+".fixture"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(f)
	}
	return f
}

// bootKernel materialises a fixture in a fake kernel.
func bootKernel(t *testing.T, f *simhost.Fixture) *simkernel.Kernel {
	t.Helper()
	k, err := simkernel.New(t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newPlugin returns a plugin whose kernel is k, with short waits.
func newPlugin(t *testing.T, k *simkernel.Kernel) *Plugin {
	t.Helper()
	p := New(Options{Logger: testkit.Logger(t, slog.LevelDebug), PollInterval: 5 * time.Millisecond, MaxWait: 300 * time.Millisecond,
		OpenKernel: func(Config, *slog.Logger) (*Kernel, error) { return &Kernel{FS: k, VDPA: k, Devlink: k}, nil }})
	t.Cleanup(p.Close)
	return p
}

// anyProgram is an executable for config dpdk_vdpa in tests that start no job: a dpdk-pmd port
// attaches only when the configured program exists.
const anyProgram = "/bin/true"

// setup boots the named fixture and returns its kernel and a fake daemon with the plugin
// configured (stock OVS 3.1 with DPDK facts unless facts edits them; dpdk_vdpa anyProgram).
func setup(t *testing.T, name string, edit func(*simhost.Fixture), facts func(*api.HostFacts)) (*simkernel.Kernel, *sdktest.FakeHost) {
	t.Helper()
	k := bootKernel(t, loadFixture(t, name, edit))
	h := sdktest.NewFakeHost(t, newPlugin(t, k))
	if facts != nil {
		facts(&h.Facts)
	}
	if err := h.Configure([]byte(`{"dpdk_vdpa": "` + anyProgram + `"}`)); err != nil {
		t.Fatal(err)
	}
	return k, h
}

// forkFacts are the facts of NVIDIA's OVS fork: the stock ones plus dpdkvdpa.
func forkFacts(f *api.HostFacts) { f.IfaceTypes = append(slices.Clone(f.IfaceTypes), "dpdkvdpa") }

// dump is the canonical text of the fake kernel's state.
func dump(t *testing.T, k *simkernel.Kernel) string {
	t.Helper()
	f, err := k.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return string(f.Format())
}

// vdpaPort is a port request of type vdpa on br0.
func vdpaPort(name string, kv ...string) api.PortRequest {
	opts := map[string]string{"pf": pf0}
	for i := 0; i+1 < len(kv); i += 2 {
		opts[kv[i]] = kv[i+1]
	}
	return api.PortRequest{Bridge: "br0", Name: name, Type: PortType, Options: opts}
}

// mustDecode decodes a port's stored state.
func mustDecode(t *testing.T, b []byte) *vdpa.State {
	t.Helper()
	st, err := decodeState(b)
	if err != nil {
		t.Fatalf("state %q: %v", b, err)
	}
	return st
}
