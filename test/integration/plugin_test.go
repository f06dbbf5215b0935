package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// buildPlugin builds the plugin main package pkg (relative to this directory) as name into
// dataDir/plugins, as `make plugins` does (testkit.InstallPlugin), and returns the dir and the
// binary's SHA-256, the pin of its config entry.
func buildPlugin(t *testing.T, dataDir, pkg, name string) (dir, sum string) {
	t.Helper()
	dir = filepath.Join(dataDir, "plugins")
	return dir, testkit.InstallPlugin(t, pkg, dir, name)
}

func vethPort(name, netns, addr string) *ovsplanev1.Port {
	return &ovsplanev1.Port{Name: name, Interfaces: []*ovsplanev1.Interface{{Name: name, Type: "veth",
		Options: map[string]string{"netns": netns, "address": addr}}}}
}

// pluginByName returns the daemon's view of one plugin.
func pluginByName(ctx context.Context, l *daemonLab, name string) (*ovsplanev1.PluginInfo, error) {
	resp, err := l.api.ListPlugins(ctx, connect.NewRequest(&ovsplanev1.ListPluginsRequest{}))
	if err != nil {
		return nil, err
	}
	for _, p := range resp.Msg.GetPlugins() {
		if p.GetName() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("plugin %q not listed", name)
}

// TestPluginEndToEnd runs the real ovsplaned with the real veth plugin (built with a test
// barrier, examples/veth-reference/internal/chaosveth, discovered in its plugin dir, pinned by
// SHA-256) on a real userspace ovs-vswitchd: ports of type veth applied through the API are
// attached by the plugin and written by the daemon; the two veth peers, in namespaces the
// plugin made, ping each other and move 4 MiB over TCP through br0. Then the plugin is killed
// with SIGKILL: it is restarted and its ports are replayed (the same OVSDB rows, traffic still
// flows). vsctl add-port with type=veth goes through the daemon. The plugin is killed again
// while 4 of 12 concurrent applies are held inside its Attach by the barrier and the other 8
// were acknowledged: the 8 stay whole, the 4 fail cleanly and leave nothing. Deleting a port
// removes its row and the plugin's namespace.
func TestPluginEndToEnd(t *testing.T) {
	lab.Require(t, lab.NeedOVS, lab.NeedTraffic)
	ctx := t.Context()
	vsns := lab.NewNetns(t) // ovs-vswitchd's namespace, where the veth host ends go
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace, Netns: vsns})
	ofctl := func(args ...string) string {
		t.Helper()
		args = append([]string{"-O", "OpenFlow13", args[0], sw.OpenFlowTarget("br0")}, args[1:]...)
		out, err := exec.CommandContext(ctx, "ovs-ofctl", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	l := newDaemonLab(t, db)
	// The sample plugin with a test barrier (chaosveth): the same plugin, except that the first
	// Attach of each port of barrier.hold is held inside it, for the kill -9 below.
	pdir, sum := buildPlugin(t, l.dir, "../../examples/veth-reference/internal/chaosveth", "ovsplane-plugin-veth")
	barrierDir := t.TempDir()
	cfgNS := uniqueNS(t, "c")
	conf := fmt.Sprintf(`
plugin_dir: %s
plugins:
  - name: veth
    path: ovsplane-plugin-veth
    sha256: %s
    config:
      barrier: {dir: %s, hold: [%s]}
      host_netns: %s
bridges:
  - name: br0
    datapath_type: netdev
    ports:
      - name: vpcfg
        interfaces:
          - name: vpcfg
            type: veth
            options: {netns: %s, address: 10.98.7.9/24}
`, pdir, sum, barrierDir, strings.Join(chaosHeld, ", "), vsns.Name, cfgNS)
	if err := os.WriteFile(l.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	l.start(ctx)

	p, err := pluginByName(ctx, l, "veth")
	if err != nil || p.GetState() != ovsplanev1.PluginState_PLUGIN_STATE_RUNNING || p.GetPid() == 0 {
		t.Fatalf("plugin veth: %+v, %v", p, err)
	}

	red, blue := uniqueNS(t, "r"), uniqueNS(t, "b")
	ports := map[string]*ovsplanev1.Port{
		"vpa": vethPort("vpa", red, "10.98.7.1/24"),
		"vpb": vethPort("vpb", blue, "10.98.7.2/24"),
	}
	for _, name := range []string{"vpa", "vpb"} {
		resp, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: ports[name]}))
		if err != nil {
			t.Fatalf("ApplyPort %s: %v", name, err)
		}
		info := resp.Msg.GetPort()
		if info.GetPlugin() != "veth" || info.GetStatus().GetState() != ovsplanev1.State_STATE_READY ||
			len(info.GetInterfaces()) != 1 || info.GetInterfaces()[0].GetOfport() <= 0 || info.GetShape().GetInterfaces()[0].GetType() == "veth" {
			t.Fatalf("ApplyPort %s: %+v", name, info)
		}
		t.Logf("%s: %s, ofport %d, shape type %q", name, info.GetPluginStatus(), info.GetInterfaces()[0].GetOfport(), info.GetShape().GetInterfaces()[0].GetType())
	}
	if got := db.Get(t, "Port", "vpa", "external_ids:ovsplane-plugin"); got != `veth` && got != `"veth"` {
		t.Errorf("Port vpa external_ids:ovsplane-plugin = %s", got)
	}
	redNS, blueNS := &lab.Netns{Name: red}, &lab.Netns{Name: blue}
	if st, err := lab.Ping(ctx, redNS, "10.98.7.2", 3); err != nil || st.Received == 0 {
		t.Fatalf("ping %s → %s through br0: %+v %v", red, blue, st, err)
	}
	if st, err := lab.TCPTransfer(ctx, redNS, blueNS, "10.98.7.2", 4<<20); err != nil {
		t.Errorf("TCP through br0: %+v %v", st, err)
	}
	// The configuration file's veth port, attached by the plugin once it ran.
	if _, err := l.api.WaitReady(ctx, connect.NewRequest(&ovsplanev1.WaitReadyRequest{Keys: []string{"port/vpcfg"}})); err != nil {
		t.Fatalf("WaitReady port/vpcfg: %v", err)
	}
	if st, err := lab.Ping(ctx, &lab.Netns{Name: cfgNS}, "10.98.7.1", 3); err != nil || st.Received == 0 {
		t.Errorf("ping from the configuration's veth port: %+v %v", st, err)
	}

	// The plugin's flow program: reloaded with drop_ethertypes [ipv4], the plugin asks for
	// flows dropping IPv4 from its ports, which the daemon programs under the plugin's cookie
	// (the ping fails); reloaded without, they are removed (the ping works again). A flow of
	// someone else on br0 is never touched.
	ofctl("add-flow", "cookie=0x1234,table=0,priority=1,actions=NORMAL")
	reload := func(drop string) {
		t.Helper()
		c := strings.Replace(conf, "      host_netns:", "      drop_ethertypes: ["+drop+"]\n      host_netns:", 1)
		if err := os.WriteFile(l.conf, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := l.api.Reload(ctx, connect.NewRequest(&ovsplanev1.ReloadRequest{})); err != nil {
			t.Fatalf("Reload: %v", err)
		}
	}
	reload("ipv4")
	lab.WaitFor(t, 20*time.Second, "IPv4 dropped by the plugin's flows", func(ctx context.Context) error {
		if st, _ := lab.Ping(ctx, redNS, "10.98.7.2", 1); st.Received != 0 {
			return fmt.Errorf("ping still answered")
		}
		return nil
	})
	reload("")
	lab.WaitFor(t, 20*time.Second, "IPv4 flowing again", func(ctx context.Context) error {
		if st, err := lab.Ping(ctx, redNS, "10.98.7.2", 1); err != nil || st.Received == 0 {
			return fmt.Errorf("no answer: %v", err)
		}
		return nil
	})
	if flows := ofctl("dump-flows", "cookie=0x1234/-1"); !strings.Contains(flows, "cookie=0x1234") {
		t.Errorf("someone else's flow was removed:\n%s", flows)
	}

	// kill -9 the plugin: the host restarts it and replays its ports.
	uuidBefore := db.Get(t, "Port", "vpa", "_uuid")
	killedAt := time.Now()
	if err := syscall.Kill(int(p.GetPid()), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var restarted *ovsplanev1.PluginInfo
	lab.WaitFor(t, 20*time.Second, "the veth plugin restarted", func(ctx context.Context) error {
		q, err := pluginByName(ctx, l, "veth")
		if err == nil && (q.GetState() != ovsplanev1.PluginState_PLUGIN_STATE_RUNNING || q.GetPid() == p.GetPid()) {
			err = fmt.Errorf("state %s, pid %d, restarts %d", q.GetState(), q.GetPid(), q.GetRestarts())
		}
		restarted = q
		return err
	})
	t.Logf("plugin restarted %v after SIGKILL (restarts %d, last error %q)", time.Since(killedAt).Round(time.Millisecond), restarted.GetRestarts(), restarted.GetLastError())
	if restarted.GetRestarts() < 1 {
		t.Errorf("restarts = %d after a SIGKILL", restarted.GetRestarts())
	}
	if got := db.Get(t, "Port", "vpa", "_uuid"); got != uuidBefore {
		t.Errorf("port vpa was rewritten by the plugin's restart: uuid %s → %s", uuidBefore, got)
	}
	if st, err := lab.Ping(ctx, blueNS, "10.98.7.1", 3); err != nil || st.Received == 0 {
		t.Errorf("ping after the plugin's restart: %+v %v", st, err)
	}

	// vsctl add-port with a plugin type goes through the daemon.
	green := uniqueNS(t, "g")
	vsctl := exec.CommandContext(ctx, vsctlBinary(t), "--db="+db.Endpoint, "add-port", "br0", "vpc", "--",
		"set", "Interface", "vpc", "type=veth", "options:netns="+green, "options:address=10.98.7.3/24")
	vsctl.Env = append(os.Environ(), "OVSPLANE_API=unix:"+filepath.Join(l.dir, "ovsplaned.sock"))
	if out, err := vsctl.CombinedOutput(); err != nil {
		t.Fatalf("vsctl add-port type=veth: %v\n%s", err, out)
	}
	if st, err := lab.Ping(ctx, &lab.Netns{Name: green}, "10.98.7.1", 3); err != nil || st.Received == 0 {
		t.Errorf("ping from the vsctl-made port: %+v %v", st, err)
	}

	// kill -9 while ports are being applied, at a known point: 12 applies run at once; the
	// plugin's barrier holds the Attach of the K ports of chaosHeld inside the plugin, after
	// their host work (pair and namespace made) and before the reply; the plugin is killed once
	// the other 12-K applies were acknowledged and the K are inside — which the barrier's
	// records prove, with the pid killed. Both outcomes must occur: the 12-K applied, the K
	// failing cleanly (unavailable, with the retry hint). After the restart the applied ones
	// are whole (row, namespace, host end) and the failed ones absent: no row, and the plugin's
	// interrupted host work detached as an orphan (no namespace, no host end).
	q, err := pluginByName(ctx, l, "veth")
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		name, ns string
		held     bool
		err      error
		done     chan struct{}
	}
	outs := make([]outcome, 12)
	var acked sync.WaitGroup // the applies the barrier does not hold
	for i := range outs {
		o := &outs[i]
		*o = outcome{name: fmt.Sprintf("vk%d", i), ns: uniqueNS(t, fmt.Sprintf("k%d", i)), done: make(chan struct{})}
		o.held = slices.Contains(chaosHeld, o.name)
		if !o.held {
			acked.Add(1)
		}
		go func() {
			defer close(o.done)
			_, o.err = l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0",
				Port: vethPort(o.name, o.ns, fmt.Sprintf("10.98.8.%d/24", i+1))}))
			if !o.held {
				acked.Done()
			}
		}()
	}
	acked.Wait()
	lab.WaitFor(t, 20*time.Second, fmt.Sprintf("%d Attach calls held inside the plugin", len(chaosHeld)), func(context.Context) error {
		return barrierInside(barrierDir, chaosHeld, q.GetPid())
	})
	for i := range outs {
		o := &outs[i] // name, ns and held only: err is the apply's until done closes
		if !o.held {
			continue
		}
		select {
		case <-o.done:
			t.Fatalf("%s: held inside the plugin, yet its apply returned before the kill: %v", o.name, o.err)
		default:
		}
		// Its host work is done: the kill leaves it behind, for the sweep to find.
		if _, err := os.Stat(filepath.Join("/run/netns", o.ns)); err != nil {
			t.Errorf("%s is held after its host work, but its namespace is missing: %v", o.name, err)
		}
	}
	if err := syscall.Kill(int(q.GetPid()), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := range outs {
		<-outs[i].done
	}
	// The held calls died inside the plugin: none of them left the barrier.
	if err := barrierInside(barrierDir, chaosHeld, q.GetPid()); err != nil {
		t.Errorf("after the kill: %v", err)
	}
	lab.WaitFor(t, 20*time.Second, "the veth plugin restarted again", func(ctx context.Context) error {
		r, err := pluginByName(ctx, l, "veth")
		if err == nil && (r.GetState() != ovsplanev1.PluginState_PLUGIN_STATE_RUNNING || r.GetPid() == q.GetPid()) {
			err = fmt.Errorf("state %s, pid %d", r.GetState(), r.GetPid())
		}
		return err
	})
	applied := 0
	for _, o := range outs {
		switch {
		case !o.held && o.err != nil:
			t.Errorf("%s was not held, yet failed: %v", o.name, o.err)
		case !o.held:
			applied++
		case o.err == nil:
			t.Errorf("%s: acknowledged although the plugin was killed inside its Attach", o.name)
		case connect.CodeOf(o.err) != connect.CodeUnavailable:
			t.Errorf("%s failed with %s, want unavailable: %v", o.name, connect.CodeOf(o.err), o.err)
		default:
			if _, ok := retryHint(o.err); !ok {
				t.Errorf("%s: unavailable without a retry hint: %v", o.name, o.err)
			}
		}
	}
	t.Logf("kill -9 with %d of 12 Attach calls inside the plugin (pid %d): %d applied, %d failed: %v", len(chaosHeld), q.GetPid(),
		applied, len(outs)-applied, outs[slices.IndexFunc(outs, func(o outcome) bool { return o.held })].err)
	if applied != len(outs)-len(chaosHeld) {
		t.Errorf("%d applied, want the %d not held", applied, len(outs)-len(chaosHeld))
	}
	var last error
	defer func() {
		if t.Failed() {
			t.Logf("last inconsistency: %v", last)
		}
	}()
	lab.WaitFor(t, 20*time.Second, "every acknowledged apply whole, every failed one absent", func(ctx context.Context) (err error) {
		defer func() {
			if ctx.Err() == nil {
				last = err
			}
		}()
		for _, o := range outs {
			row, _, err := db.VsctlErr(ctx, "--if-exists", "get", "Port", o.name, "name")
			if err != nil {
				return err
			}
			_, nserr := os.Stat(filepath.Join("/run/netns", o.ns))
			_, linkErr := vsns.Exec(ctx, "ip", "link", "show", o.name)
			switch {
			case o.err == nil && (row == "" || nserr != nil || linkErr != nil):
				return fmt.Errorf("%s applied but row %q, namespace %v, host end %v", o.name, row, nserr, linkErr)
			case o.err != nil && (row != "" || nserr == nil || linkErr == nil):
				what := ""
				if nserr == nil { // say what is left: a placeholder file or a namespace, and its links
					st, _ := exec.CommandContext(ctx, "stat", "-c", "%s bytes, dev %d", filepath.Join("/run/netns", o.ns)).CombinedOutput()
					links, _ := exec.CommandContext(ctx, "ip", "-n", o.ns, "-o", "link").CombinedOutput()
					what = fmt.Sprintf(" (%s; links: %s)", strings.TrimSpace(string(st)), strings.TrimSpace(string(links)))
				}
				return fmt.Errorf("%s failed (%v) but row %q, namespace present %v, host end present %v%s", o.name, o.err, row, nserr == nil, linkErr == nil, what)
			}
		}
		return nil
	})

	// A failed apply can be retried: nothing of it is in the way.
	for _, o := range outs {
		if o.err == nil {
			continue
		}
		if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0",
			Port: vethPort(o.name, o.ns, "10.98.8.200/24")})); err != nil {
			t.Errorf("retrying %s after the plugin's restart: %v", o.name, err)
		}
		break
	}

	// Bad input through the plugin: a clear error naming the option, nothing written.
	_, err = l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0",
		Port: &ovsplanev1.Port{Name: "vpbad", Interfaces: []*ovsplanev1.Interface{{Name: "vpbad", Type: "veth",
			Options: map[string]string{"address": "10.0.0.300/24"}}}}}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "address") {
		t.Errorf("bad veth address: %v", err)
	}
	if out, _, err := db.VsctlErr(ctx, "--if-exists", "get", "Port", "vpbad", "name"); err != nil || out != "" {
		t.Errorf("refused port written: %q %v", out, err)
	}

	// Delete: the row goes, then the plugin removes the pair and its namespace.
	for _, name := range []string{"vpa", "vpc"} {
		if _, err := l.api.DeletePort(ctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: name})); err != nil {
			t.Fatalf("DeletePort %s: %v", name, err)
		}
	}
	if out, _, err := db.VsctlErr(ctx, "--if-exists", "get", "Port", "vpa", "name"); err != nil || out != "" {
		t.Errorf("deleted port still in OVSDB: %q %v", out, err)
	}
	for _, ns := range []string{red, green} {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); !os.IsNotExist(err) {
			t.Errorf("namespace %s still there after DeletePort: %v", ns, err)
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", blue)); err != nil {
		t.Errorf("namespace %s of the remaining port vpb: %v", blue, err)
	}
}

// chaosHeld are the ports whose first Attach the barrier holds inside the plugin in
// TestPluginEndToEnd's kill -9 (K = 4 of 12).
var chaosHeld = []string{"vk1", "vk4", "vk7", "vk10"}

// barrierInside returns nil when every port of held is inside the plugin process pid, by the
// barrier's records in dir: <port>.inside naming pid, and no <port>.left (the call ended).
func barrierInside(dir string, held []string, pid int32) error {
	for _, port := range held {
		if why, err := os.ReadFile(filepath.Join(dir, port+".left")); err == nil {
			return fmt.Errorf("%s left the barrier: %s", port, strings.TrimSpace(string(why)))
		}
		b, err := os.ReadFile(filepath.Join(dir, port+".inside"))
		if err != nil {
			return fmt.Errorf("%s is not inside the plugin: %w", port, err)
		}
		if got := strings.TrimSpace(string(b)); got != strconv.Itoa(int(pid)) {
			return fmt.Errorf("%s is held by pid %s, not the plugin's %d", port, got, pid)
		}
	}
	return nil
}

// uniqueNS returns an unused namespace name, removed at cleanup if something left it.
func uniqueNS(t *testing.T, tag string) string {
	t.Helper()
	name := fmt.Sprintf("opi%s%d%d", tag, os.Getpid()%100000, time.Now().UnixNano()%100000)
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
			_ = exec.Command("ip", "netns", "del", name).Run()
		}
	})
	return name
}
