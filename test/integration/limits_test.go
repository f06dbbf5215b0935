//go:build linux

package integration

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
)

// Issue 12 ("Safety"), items 2 and 3, against a real ovsdb-server and ovs-vswitchd: every probe
// gets a clear error naming the object and the fix, nothing of it is written, and every other
// object, batch neighbour and the switch stay untouched.

// TestDaemonRefusesUnboundedContent (item 2): an ApplyPort with 100,000 interfaces (under the
// API's 4 MiB cap) and ports with megabyte external_ids values are refused with the bound and
// the fix; nothing is written; the daemon keeps serving (a port applied afterwards is ready, a
// port deleted afterwards is gone) and logs a few lines, not one per interface.
func TestDaemonRefusesUnboundedContent(t *testing.T) {
	ctx := timeout(t, 5*time.Minute)
	db, l := newDummyDaemonLab(t)
	p := l.start(ctx)
	if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort("keep0")})); err != nil {
		t.Fatal(err)
	}
	before := db.Vsctl(t, "--format=csv", "--columns=name,external_ids", "list", "Port")
	logBefore := strings.Count(p.Out.String(), "\n")

	bond := &ovsplanev1.Port{Name: "bond0", BondMode: "balance-slb"}
	for i := range 100000 {
		bond.Interfaces = append(bond.Interfaces, &ovsplanev1.Interface{Name: fmt.Sprintf("m%d", i), Type: "internal"})
	}
	big := strings.Repeat("x", 3900<<10)
	probes := []struct {
		port *ovsplanev1.Port
		says []string
	}{
		{bond, []string{`port "bond0"`, "100000 interfaces, more than 64 (limits.MaxInterfacesPerPort)", "split them over several ports"}},
		{&ovsplanev1.Port{Name: "fat0", ExternalIds: map[string]string{"blob": big}, Interfaces: []*ovsplanev1.Interface{{Name: "fat0", Type: "internal"}}},
			[]string{`port "fat0"`, `external_ids key "blob"`, "more than 4096 (limits.MaxValueBytes)", "keep the data outside OVSDB"}},
		{&ovsplanev1.Port{Name: "fat1", Interfaces: []*ovsplanev1.Interface{{Name: "fat1", Type: "internal", Options: map[string]string{"blob": big}}}},
			[]string{`interface "fat1"`, `options key "blob"`, "limits.MaxValueBytes"}},
	}
	for _, pr := range probes {
		_, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: pr.port}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("port %s: got %v, want InvalidArgument", pr.port.Name, err)
		}
		for _, s := range pr.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("port %s: %q does not say %q", pr.port.Name, testkit.Tail(err.Error(), 500), s)
			}
		}
		if _, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: pr.port.Name})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("port %s: GetPort after the refusal: %v, want NotFound", pr.port.Name, err)
		}
	}
	if after := db.Vsctl(t, "--format=csv", "--columns=name,external_ids", "list", "Port"); after != before {
		t.Errorf("the refusals changed OVSDB:\nbefore %s\nafter  %s", before, after)
	}
	if out := db.Vsctl(t, "--columns=name", "find", "Interface", "name=m0"); strings.TrimSpace(out) != "" {
		t.Errorf("an interface of the refused bond was written: %s", out)
	}
	// The daemon still serves, and its log did not grow by a line per refused interface.
	res, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort("after0")}))
	if err != nil || res.Msg.GetPort().GetStatus().GetState() != ovsplanev1.State_STATE_READY {
		t.Fatalf("a port applied after the refusals: %v, %v", res, err)
	}
	if _, err := l.api.DeletePort(ctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: "keep0"})); err != nil {
		t.Fatalf("DeletePort after the refusals: %v", err)
	}
	if grown := strings.Count(p.Out.String(), "\n") - logBefore; grown > 50 {
		t.Errorf("the daemon logged %d lines for 3 refused requests and 2 changes:\n%s", grown, testkit.Tail(p.Out.String(), 3000))
	}
	p.stop(t)
}

// TestDaemonRefusesBytesOVSCannotTake (item 3): a port with a NUL in an external_ids value,
// sent together with valid neighbours (they share the daemon's batches), is refused naming
// the port, the key and the fix; the neighbours are applied and ready; ovsdb-server never
// sees the NUL (it would drop the session). Names ".", "..", "a:b" and names with a zero-width
// space are refused with the reason; nothing of any probe is written and the switch is as it
// was.
func TestDaemonRefusesBytesOVSCannotTake(t *testing.T) {
	ctx := timeout(t, 5*time.Minute)
	db, l := newDummyDaemonLab(t)
	p := l.start(ctx)

	type answer struct {
		name string
		port *ovsplanev1.Port
		err  error
	}
	ports := []*ovsplanev1.Port{}
	for i := range 16 {
		ports = append(ports, apiPort(fmt.Sprintf("n%d", i)))
	}
	nul := apiPort("nul0")
	nul.ExternalIds = map[string]string{"iface-id": "vif\x00x"}
	ctl := apiPort("ctl0")
	ctl.Interfaces[0].Options = map[string]string{"k": "a\x01b"}
	ports = slices.Insert(ports, 5, nul)
	ports = slices.Insert(ports, 11, ctl)
	answers := make(chan answer, len(ports))
	var start, wg sync.WaitGroup
	start.Add(1)
	for _, port := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			res, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: port}))
			if err == nil && res.Msg.GetPort().GetStatus().GetState() != ovsplanev1.State_STATE_READY {
				err = fmt.Errorf("applied but %s: %s", res.Msg.GetPort().GetStatus().GetState(), res.Msg.GetPort().GetStatus().GetError())
			}
			answers <- answer{port.Name, port, err}
		}()
	}
	start.Done()
	wg.Wait()
	close(answers)
	for a := range answers {
		switch a.name {
		case "nul0", "ctl0":
			want := map[string][]string{
				"nul0": {`port "nul0"`, `external_ids key "iface-id"`, "NUL byte at byte 3", "use printable UTF-8"},
				"ctl0": {`interface "ctl0"`, `options key "k"`, "control character U+0001", "use printable UTF-8"},
			}[a.name]
			if connect.CodeOf(a.err) != connect.CodeInvalidArgument {
				t.Errorf("%s: got %v, want InvalidArgument", a.name, a.err)
				continue
			}
			for _, s := range want {
				if !strings.Contains(a.err.Error(), s) {
					t.Errorf("%s: %q does not say %q", a.name, a.err, s)
				}
			}
		default:
			if a.err != nil {
				t.Errorf("neighbour %s: %v", a.name, a.err)
			}
		}
	}
	listed := strings.Fields(db.Vsctl(t, "list-ports", "br0"))
	for _, port := range ports {
		refused := port.Name == "nul0" || port.Name == "ctl0"
		if slices.Contains(listed, port.Name) == refused {
			t.Errorf("port %s: in OVS %v, refused %v", port.Name, !refused, refused)
		}
	}
	if log, err := os.ReadFile(db.LogPath); err != nil || strings.Contains(string(log), "Protocol error") {
		t.Errorf("ovsdb-server dropped a session (%v):\n%s", err, testkit.Tail(string(log), 2000))
	}

	before := db.Vsctl(t, "--format=csv", "--columns=name,external_ids", "list", "Port")
	bridgesBefore := db.Vsctl(t, "list-br")
	names := []struct {
		bridge bool
		name   string
		says   string
	}{
		{false, ".", `port ".": name: "." and ".." are not device names (the kernel and ovs-vswitchd refuse them); choose another name`},
		{false, "..", `port "..": name: "." and ".." are not device names`},
		{false, "a:b", `port "a:b": name: contains ':' at byte 1`},
		{false, "p\u200b0", `port "p\u200b0": name: contains U+200B (an invisible format character) at byte 1: it looks like another name; remove it`},
		{true, "br\u200b0", `bridge "br\u200b0": name: contains U+200B (an invisible format character) at byte 2: it looks like another name; remove it`},
		{true, "a:b", `bridge "a:b": name: contains ':' at byte 1`},
		{true, "..", `bridge "..": name: "." and ".."`},
	}
	for _, n := range names {
		var err error
		if n.bridge {
			_, err = l.api.ApplyBridge(ctx, connect.NewRequest(&ovsplanev1.ApplyBridgeRequest{Bridge: &ovsplanev1.Bridge{Name: n.name, DatapathType: "netdev"}}))
		} else {
			_, err = l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort(n.name)}))
		}
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), n.says) {
			t.Errorf("%q (bridge %v): got %v, want InvalidArgument saying %q", n.name, n.bridge, err, n.says)
		}
	}
	if after := db.Vsctl(t, "--format=csv", "--columns=name,external_ids", "list", "Port"); after != before {
		t.Errorf("refused names changed the ports:\nbefore %s\nafter  %s", before, after)
	}
	if after := db.Vsctl(t, "list-br"); after != bridgesBefore {
		t.Errorf("refused names changed the bridges:\nbefore %s\nafter  %s", bridgesBefore, after)
	}
	p.stop(t)
}
