package vethplugin

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestRealVethsThroughTheContract drives the plugin with the real kernel (as root), through
// the SDK's fake host and the real gRPC shims: the host ends live in a throwaway namespace
// standing for ovs-vswitchd's (the host_netns setting), the peers in namespaces the plugin creates. It checks with
// iproute2 what Attach built, that a restarted plugin adopts the pairs from the host's
// replay, and that Detach removes the pairs and the namespaces.
func TestRealVethsThroughTheContract(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	host := lab.NewNetns(t)
	newPlugin := func() *Plugin {
		log := testkit.Logger(t, slog.LevelInfo)
		p, err := New(Options{Logger: log, NewLinks: func(hostNetns string) (Links, error) {
			return veth.New(veth.Config{Owner: Name, HostNetns: hostNetns, Logger: log})
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	h := sdktest.NewFakeHost(t, newPlugin())
	// host_netns by name: the host ends go to the throwaway namespace.
	if err := h.Configure([]byte(`{"default_mtu": 1450, "host_netns": "` + host.Name + `"}`)); err != nil {
		t.Fatal(err)
	}
	red := fmt.Sprintf("ovsvp%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(veth.DefaultNetnsDir, red)); err == nil {
			_ = exec.Command("ip", "netns", "del", red).Run()
		}
	})
	reqs := []api.PortRequest{
		{Bridge: "br0", Name: "vr1", Type: PortType, Options: map[string]string{"netns": red, "address": "10.98.0.1/24", "peer": "eth0"}},
		{Bridge: "br0", Name: "vr2", Type: PortType, Options: map[string]string{"netns": red, "address": "fd98::2/64", "mtu": "9000"}},
		{Bridge: "br1", Name: "vr3", Type: PortType},
	}
	for _, req := range reqs {
		if ps, err := h.Validate(req); err != nil || len(ps) > 0 {
			t.Fatalf("Validate %s: %v %v", req.Name, ps, err)
		}
		a, err := h.Attach(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", req.Name, a.Status)
	}
	for _, c := range []struct {
		ns, dev string
		mtu     int
		addr    string
	}{
		{host.Name, "vr1", 1450, ""}, {red, "eth0", 1450, "10.98.0.1/24"},
		{host.Name, "vr2", 9000, ""}, {red, "vr2-p", 9000, "fd98::2/64"},
		{host.Name, "vr3", 1450, ""}, {host.Name, "vr3-p", 1450, ""},
	} {
		l := ipLink(t, c.ns, c.dev)
		if l == nil || l.MTU != c.mtu || !strings.Contains(strings.Join(l.Flags, ","), "UP") ||
			!strings.HasPrefix(l.Alias, "ovsplane/"+Name+" veth ") || (c.addr != "" && !l.hasAddr(c.addr)) {
			t.Errorf("%s in %s: %+v; want up, mtu %d, marked, address %q", c.dev, c.ns, l, c.mtu, c.addr)
		}
	}

	// A restarted plugin (a new process) gets the replay and adopts the pairs.
	before := ipLink(t, host.Name, "vr1").Index
	if err := h.Restart(newPlugin()); err != nil {
		t.Fatal(err)
	}
	if after := ipLink(t, host.Name, "vr1"); after == nil || after.Index != before {
		t.Errorf("vr1 after the replay: %+v; want the same interface (index %d)", after, before)
	}
	owned, err := h.List()
	if err != nil || len(owned) != 3 || owned[2].Bridge != "br1" {
		t.Fatalf("List = %+v, %v", owned, err)
	}

	for _, req := range reqs {
		if err := h.Detach(req.Bridge, req.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(veth.DefaultNetnsDir, red)); !os.IsNotExist(err) {
		t.Errorf("namespace %s still there after its last port was detached: %v", red, err)
	}
	for _, dev := range []string{"vr1", "vr2", "vr3", "vr3-p"} {
		if ipLink(t, host.Name, dev) != nil {
			t.Errorf("%s still there after Detach", dev)
		}
	}
}

// link is the part of `ip -j -d addr show` the test reads.
type link struct {
	Index    int      `json:"ifindex"`
	MTU      int      `json:"mtu"`
	Flags    []string `json:"flags"`
	Alias    string   `json:"ifalias"`
	AddrInfo []struct {
		Local     string `json:"local"`
		PrefixLen int    `json:"prefixlen"`
	} `json:"addr_info"`
}

func (l *link) hasAddr(cidr string) bool {
	for _, a := range l.AddrInfo {
		if fmt.Sprintf("%s/%d", a.Local, a.PrefixLen) == cidr {
			return true
		}
	}
	return false
}

// ipLink returns the device as iproute2 sees it in the namespace, nil when it does not exist.
func ipLink(t *testing.T, ns, dev string) *link {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "ip", "-n", ns, "-j", "-d", "addr", "show", "dev", dev).Output()
	if err != nil {
		return nil
	}
	var ls []link
	if err := json.Unmarshal(out, &ls); err != nil || len(ls) != 1 {
		t.Fatalf("ip -n %s -j -d addr show dev %s: %v: %s", ns, dev, err, out)
	}
	return &ls[0]
}
