package dsaplugin

import (
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/ovsproc/unixctltest"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// countingFS records every change made through it (writes, chown, chmod).
type countingFS struct {
	dsa.FS
	mu      sync.Mutex
	changes []string
}

func (c *countingFS) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, s)
}

func (c *countingFS) WriteFile(p, v string) error {
	c.note("write " + p + "=" + v)
	return c.FS.WriteFile(p, v)
}

func (c *countingFS) Chown(p string, uid, gid int) error {
	c.note("chown " + p)
	return c.FS.Chown(p, uid, gid)
}

func (c *countingFS) Chmod(p string, mode fs.FileMode) error {
	c.note("chmod " + p)
	return c.FS.Chmod(p, mode)
}

// Changes returns the changes so far and forgets them.
func (c *countingFS) Changes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.changes
	c.changes = nil
	return out
}

// rig is a plugin on a simulated host under a fake daemon, with a fake ovs-vswitchd unixctl
// server (stock or capable) in the facts' run directory.
type rig struct {
	sim  string // the simulated kernel's directory
	fs   *countingFS
	ovs  *unixctltest.Server
	host *sdktest.FakeHost
}

// newSim lays out a simulated host of variant v.
func newSim(t *testing.T, v simidxd.Variant) string {
	t.Helper()
	dir := t.TempDir()
	if err := simidxd.Write(dir, v); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newRig starts a fake ovs-vswitchd (capable or stock, PMD threads from
// unixctltest.StockPMDRxqShow: vhu0 and vhu1 on core 1, NUMA 0), a plugin whose machine is the
// simulated host of variant v (its changes counted), and a fake daemon whose facts are the
// fake ovs-vswitchd's: its commands, run dir, a private data dir, and other_config (with
// vhost-async-support=true when capable).
func newRig(t *testing.T, v simidxd.Variant, capable bool) *rig {
	t.Helper()
	r := &rig{sim: newSim(t, v), fs: &countingFS{}}
	r.ovs = unixctltest.Start(t, unixctltest.Options{VhostAsync: capable, PMDRxqShow: unixctltest.StockPMDRxqShow()})
	p := New(Options{Logger: testkit.Logger(t, slog.LevelDebug),
		OpenMachine: func(cfg Config, log *slog.Logger) (*Machine, error) {
			m, err := OpenMachine(cfg, log)
			if err != nil {
				return nil, err
			}
			r.fs.FS = m.FS
			m.FS = r.fs
			return m, nil
		}})
	r.host = sdktest.NewFakeHost(t, p)
	cmds, err := ovsproc.ParseCommandList(r.ovs.CommandList())
	if err != nil {
		t.Fatal(err)
	}
	r.host.Facts.AppctlCommands = cmds
	r.host.Facts.OVSRunDir = r.ovs.RunDir
	r.host.Facts.DataDir = t.TempDir()
	r.host.Facts.OtherConfig = map[string]string{"dpdk-init": "true", "dpdk-extra": "--no-pci"}
	if capable {
		r.host.Facts.OtherConfig[dsa.VhostAsyncSupportKey] = "true"
	}
	return r
}

// config returns the plugin configuration JSON of fields over the rig's simulated host.
func (r *rig) config(t *testing.T, fields map[string]any) []byte {
	t.Helper()
	c := map[string]any{"simulate": r.sim}
	for k, v := range fields {
		c[k] = v
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dsa0 is the configuration's devices list with dsa0 and n work queues.
func dsa0(n int) []any {
	return []any{map[string]any{"dsa": "dsa0", "wqs": map[string]any{"count": n}}}
}

// attr reads a file of the simulated host ("" when absent).
func (r *rig) attr(p string) string {
	b, err := os.ReadFile(filepath.Join(r.sim, filepath.FromSlash(p)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// node reports whether the simulated host has /dev/dsa/<wq>.
func (r *rig) node(wq string) bool {
	_, err := os.Stat(filepath.Join(r.sim, "dev", "dsa", wq))
	return err == nil
}

// vhostEvent is an EventAdded of a foreign dpdkvhostuserclient interface, as os-vif creates it.
func vhostEvent(name string) api.PortEvent {
	return api.PortEvent{Kind: api.EventAdded, Owner: api.OwnerForeign, Bridge: "br-int", Port: name, Interface: name,
		Type: "dpdkvhostuserclient", Options: map[string]string{"vhost-server-path": "/var/run/openvswitch/" + name},
		ExternalIDs: map[string]string{"iface-id": "5f2d-" + name, "attached-mac": "fa:16:3e:00:00:01", "vm-uuid": "0c4b", "iface-status": "active"}}
}

// statuses delivers a resync of the named vhost-user interfaces and returns their statuses.
func (r *rig) statuses(t *testing.T, names ...string) map[string]api.InterfaceStatus {
	t.Helper()
	batch := api.PortEventBatch{Resync: true, ResyncDone: true}
	for _, n := range names {
		batch.Events = append(batch.Events, vhostEvent(n))
	}
	changes, err := r.host.Events(batch)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]api.InterfaceStatus{}
	for _, c := range changes {
		if c.Status == nil || len(c.Set) > 0 || len(c.Remove) > 0 {
			t.Errorf("change %+v: want a status and no other_config change", c)
			continue
		}
		out[c.Interface] = *c.Status
	}
	return out
}
