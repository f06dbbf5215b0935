package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/vethplugin"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestEndToEndThroughOVS validates the OVS shape the plugin returns against a real
// ovs-vswitchd (userspace datapath, in a throwaway namespace named to the plugin by its
// host_netns setting): two veth ports attached through the SDK's fake host, their Attachments
// written with ovs-vsctl as ovsplaned writes them, and the two peer ends, each in a namespace
// the plugin created, ping each other and move 4 MiB over TCP (offloads off) through the
// bridge. The flow program's flows, added with ovs-ofctl under the plugin's cookie, then drop
// IPv4 from the plugin's ports (the ping fails) until they are deleted by cookie. Detach
// leaves nothing.
func TestEndToEndThroughOVS(t *testing.T) {
	lab.Require(t, lab.NeedOVS, lab.NeedTraffic)
	ctx := t.Context()
	host := lab.NewNetns(t) // ovs-vswitchd's namespace, where the host ends live
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: host})

	log := testkit.Logger(t, slog.LevelDebug)
	p, err := vethplugin.New(vethplugin.Options{Logger: log, NewLinks: func(hostNetns string) (vethplugin.Links, error) {
		return veth.New(veth.Config{Owner: vethplugin.Name, HostNetns: hostNetns, Logger: log})
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	// The SDK's fake host plays ovsplaned: real gRPC shims, the host's checks on every answer,
	// the facts of this Open vSwitch, stored plugin state.
	h := sdktest.NewFakeHost(t, p)
	h.Facts = api.HostFacts{OVSVersion: db.Get(t, "Open_vSwitch", ".", "ovs_version"),
		IfaceTypes:    ovsSet(db.Get(t, "Open_vSwitch", ".", "iface_types")),
		DatapathTypes: ovsSet(db.Get(t, "Open_vSwitch", ".", "datapath_types"))}
	cookies := h.Cookies
	if err := h.Configure([]byte(`{"drop_ethertypes": ["ipv4"], "default_mtu": 1500, "host_netns": "` + host.Name + `"}`)); err != nil {
		t.Fatal(err)
	}

	red, blue := uniqueNetns(t, "r"), uniqueNetns(t, "b")
	db.Vsctl(t, "add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev")
	reqs := []api.PortRequest{
		{Bridge: "br0", Name: "ve2e1", Type: "veth", Options: map[string]string{"netns": red, "address": "10.99.7.1/24"}},
		{Bridge: "br0", Name: "ve2e2", Type: "veth", Options: map[string]string{"netns": blue, "address": "10.99.7.2/24"}},
	}
	for _, req := range reqs {
		if problems, err := h.Validate(req); err != nil || len(problems) > 0 {
			t.Fatalf("Validate %s: %v %v", req.Name, problems, err)
		}
		a, err := h.Attach(req)
		if err != nil {
			t.Fatal(err)
		}
		db.Vsctl(t, vsctlAddPort(req.Bridge, a)...)
		t.Logf("attached %s: %s (state %s)", req.Name, a.Status, a.State)
	}
	ofports := map[string]int64{}
	for _, req := range reqs {
		lab.WaitFor(t, 10*time.Second, req.Name+" ofport", func(ctx context.Context) error {
			out, _, err := db.VsctlErr(ctx, "get", "Interface", req.Name, "ofport")
			n, _ := strconv.ParseInt(out, 10, 64)
			if err == nil && n <= 0 {
				ierr, _, _ := db.VsctlErr(ctx, "get", "Interface", req.Name, "error")
				err = fmt.Errorf("ofport %s, error %s", out, ierr)
			}
			ofports[req.Name] = n
			return err
		})
	}

	redNS, blueNS := &lab.Netns{Name: red}, &lab.Netns{Name: blue}
	if st, err := lab.Ping(ctx, redNS, "10.99.7.2", 3); err != nil || st.Received == 0 {
		t.Fatalf("ping %s → %s through br0: %+v %v\n%s", red, blue, st, err, sw.Appctl(t, "dpif/show"))
	}

	if st, err := lab.TCPTransfer(ctx, redNS, blueNS, "10.99.7.2", 4<<20); err != nil {
		t.Errorf("TCP through br0: %+v %v", st, err)
	}

	// The flow program: drop IPv4 coming in from the plugin's ports.
	facts := api.BridgeFacts{Name: "br0", DatapathType: "netdev"}
	for _, name := range slices.Sorted(maps.Keys(ofports)) {
		facts.Ports = append(facts.Ports, api.BridgePort{Port: name, Interface: name, Type: "system", Ofport: ofports[name],
			Owner: api.OwnerPlugin, Plugin: vethplugin.Name})
	}
	fs, err := h.Flows(facts)
	if err != nil || len(fs.Flows) != 2 {
		t.Fatalf("Flows = %+v, %v; want one per port", fs, err)
	}
	target := sw.OpenFlowTarget("br0")
	for _, f := range fs.Flows {
		if !cookies.Contains(f.Cookie) {
			t.Fatalf("flow %+v: cookie outside %+v", f, cookies)
		}
		ofctl(t, "add-flow", target, fmt.Sprintf("cookie=%#x,table=%d,priority=%d,%s,actions=%s", f.Cookie, f.Table, f.Priority, f.Match, f.Actions))
	}
	if st, _ := lab.Ping(ctx, blueNS, "10.99.7.1", 3); st.Received != 0 {
		t.Errorf("ping with IPv4 dropped: %+v; want no reply", st)
	}
	ofctl(t, "del-flows", target, fmt.Sprintf("cookie=%#x/%#x", cookies.Value, cookies.Mask))
	if st, err := lab.Ping(ctx, blueNS, "10.99.7.1", 3); err != nil || st.Received == 0 {
		t.Errorf("ping after the flows were deleted: %+v %v", st, err)
	}

	// Detach: the host removes the ports from OVSDB first, then calls Detach.
	owned, err := h.List()
	if err != nil || len(owned) != 2 || owned[0].Bridge != "br0" {
		t.Fatalf("List = %+v, %v; want both ports on br0", owned, err)
	}
	for _, req := range reqs {
		db.Vsctl(t, "del-port", req.Bridge, req.Name)
		if err := h.Detach(req.Bridge, req.Name); err != nil { // with the state Attach returned
			t.Fatal(err)
		}
	}
	for _, ns := range []string{red, blue} {
		if _, err := os.Stat(filepath.Join(veth.DefaultNetnsDir, ns)); !os.IsNotExist(err) {
			t.Errorf("namespace %s still there after Detach: %v", ns, err)
		}
	}
	if owned, err := h.List(); err != nil || len(owned) != 0 {
		t.Errorf("List after Detach = %+v, %v", owned, err)
	}
}

// vsctlAddPort turns an Attachment into one ovs-vsctl transaction, as ovsplaned writes it:
// add-port with the interface's columns in the same transaction.
func vsctlAddPort(bridge string, a api.Attachment) []string {
	var args []string
	for _, port := range a.Ports {
		br := port.Bridge
		if br == "" {
			br = bridge
		}
		args = append(args, "--", "add-port", br, port.Name)
		for _, iface := range port.Interfaces {
			args = append(args, "--", "set", "Interface", iface.Name, "type="+iface.Type)
			for _, k := range slices.Sorted(maps.Keys(iface.Options)) {
				args = append(args, fmt.Sprintf("options:%s=%q", k, iface.Options[k]))
			}
			for _, k := range slices.Sorted(maps.Keys(iface.ExternalIDs)) {
				args = append(args, fmt.Sprintf("external_ids:%s=%q", k, iface.ExternalIDs[k]))
			}
			if iface.MTURequest != nil {
				args = append(args, "mtu_request="+strconv.Itoa(*iface.MTURequest))
			}
		}
	}
	return args
}

// ovsSet parses an OVSDB set of strings as ovs-vsctl prints it: [a, b, "c d"].
func ovsSet(s string) []string {
	var out []string
	for _, f := range strings.Split(strings.Trim(s, "[]"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			if u, err := strconv.Unquote(f); err == nil {
				f = u
			}
			out = append(out, f)
		}
	}
	return out
}

// ofctl runs ovs-ofctl and fails the test on error.
func ofctl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.CommandContext(t.Context(), "ovs-ofctl", args...).CombinedOutput(); err != nil {
		t.Fatalf("ovs-ofctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// uniqueNetns returns an unused namespace name, removed at cleanup if something left it.
func uniqueNetns(t *testing.T, tag string) string {
	t.Helper()
	name := fmt.Sprintf("ovsve%s%d%d", tag, os.Getpid(), time.Now().UnixNano()%100000)
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(veth.DefaultNetnsDir, name)); err == nil {
			_ = exec.Command("ip", "netns", "del", name).Run()
		}
	})
	return name
}
