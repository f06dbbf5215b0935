//go:build linux

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
)

// factsRecord is one line plugins/host/testdata/factsplugin writes per Configure.
type factsRecord struct {
	PID   int           `json:"pid"`
	Facts api.HostFacts `json:"facts"`
}

// readConfigured returns the facts plugin's records in its data dir under dataDir.
func readConfigured(dataDir, plugin string) ([]factsRecord, error) {
	f, err := os.Open(filepath.Join(dataDir, "plugin-data", plugin, "configured.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []factsRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r factsRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// TestPluginFactsFollowVswitchdRestart runs the real ovsplaned with a plugin that records the
// facts of each Configure, on a real ovs-vswitchd with the dummy datapath: the plugin gets
// ovs-vswitchd's unixctl command set (list-commands, version, the userspace datapath's
// dpif-netdev/pmd-rxq-show, the dummy netdev's commands) and the "dummy" interface types.
// ovs-vswitchd is then stopped (the daemon's statuses say so) and replaced by one without the
// dummy datapath (in a namespace of its own, as it creates real devices): the daemon sees it
// running again, and the same plugin process is configured again with the new facts (no
// netdev-dummy commands, no dummy types). How long that took after the new ovs-vswitchd was up
// is logged.
func TestPluginFactsFollowVswitchdRestart(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS, lab.NeedNetns)
	ctx := timeout(t, 3*time.Minute)
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	l := newDaemonLab(t, db)
	pdir, sum := buildPlugin(t, l.dir, "../../plugins/host/testdata/factsplugin", "facts")
	conf := fmt.Sprintf("plugin_dir: %s\nplugins:\n  - name: facts\n    path: facts\n    sha256: %s\n%s", pdir, sum, daemonConfig)
	if err := os.WriteFile(l.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	l.start(ctx)

	var first factsRecord
	lab.WaitFor(t, 30*time.Second, "the plugin configured", func(context.Context) error {
		recs, err := readConfigured(l.dir, "facts")
		if err != nil || len(recs) == 0 {
			return fmt.Errorf("no Configure recorded: %v", err)
		}
		first = recs[len(recs)-1]
		return nil
	})
	for _, c := range []string{"list-commands", "version", "dpif-netdev/pmd-rxq-show", "netdev-dummy/receive"} {
		if !first.Facts.HasAppctlCommand(c) {
			t.Errorf("the plugin's AppctlCommands (%d) lack %s", len(first.Facts.AppctlCommands), c)
		}
	}
	if !slices.Contains(first.Facts.IfaceTypes, "dummy") || first.Facts.OVSRunDir != db.Dir {
		t.Errorf("facts at start: iface types %q, run dir %q", first.Facts.IfaceTypes, first.Facts.OVSRunDir)
	}

	// The same database, served by an ovs-vswitchd without the dummy datapath. The daemon
	// sees the old one gone first (its statuses say so), as after a real restart.
	sw.Stop(t)
	lab.WaitFor(t, 30*time.Second, "the daemon to see ovs-vswitchd gone", func(ctx context.Context) error {
		resp, err := l.api.GetPort(ctx, connect.NewRequest(&ovsplanev1.GetPortRequest{Name: "cfg0"}))
		if err != nil {
			return err
		}
		if e := resp.Msg.GetPort().GetStatus().GetError(); !strings.Contains(e, "ovs-vswitchd is not running") {
			return fmt.Errorf("port cfg0: %q", e)
		}
		return nil
	})
	ns := lab.NewNetns(t)
	spec := ovsproc.Layout{Dir: db.Dir}.Vswitchd(ovsproc.DefaultVswitchd, "--disable-system", "--disable-system-route")
	spec.Argv = append([]string{"ip", "netns", "exec", ns.Name}, spec.Argv...)
	p, err := ovsproc.NewDaemon(spec).Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Stop(context.Background(), func(ctx context.Context) error {
			_, err := ovsproc.Unixctl(ctx, spec.Ctl, "exit", "--cleanup")
			return err
		})
	})
	wctx, stop := p.Watch(ctx)
	defer stop()
	if _, err := (ovsproc.Tools{Env: db.Env(), Endpoint: db.Endpoint}).WaitVswitchd(wctx, spec.Ctl, false); err != nil {
		t.Fatal(p.Report(err))
	}
	up := time.Now()
	var now factsRecord
	lab.WaitFor(t, 60*time.Second, "the plugin configured again with the new facts", func(context.Context) error {
		recs, err := readConfigured(l.dir, "facts")
		if err != nil {
			return err
		}
		now = recs[len(recs)-1]
		if now.Facts.HasAppctlCommand("netdev-dummy/receive") || slices.Contains(now.Facts.IfaceTypes, "dummy") {
			return fmt.Errorf("%d Configure calls, the last with the dummy datapath's facts", len(recs))
		}
		return nil
	})
	t.Logf("configured again %v after the new ovs-vswitchd was up; commands %d → %d, iface types %d → %d",
		time.Since(up).Round(time.Millisecond), len(first.Facts.AppctlCommands), len(now.Facts.AppctlCommands),
		len(first.Facts.IfaceTypes), len(now.Facts.IfaceTypes))
	if now.PID != first.PID {
		t.Errorf("the plugin was restarted (pid %d, then %d), not configured again", first.PID, now.PID)
	}
	for _, c := range []string{"list-commands", "version", "dpif-netdev/pmd-rxq-show"} {
		if !now.Facts.HasAppctlCommand(c) {
			t.Errorf("after the restart the plugin's AppctlCommands (%d) lack %s", len(now.Facts.AppctlCommands), c)
		}
	}
}
