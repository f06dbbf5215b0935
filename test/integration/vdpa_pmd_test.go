//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/vdpa/standintest"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vdpa"
)

// TestVDPAPMDJob runs the real ovsplaned with the real vdpa plugin (simulation mode on the
// ConnectX-6 Dx fixture, dpdk_vdpa the stand-in) on a real ovs-vswitchd with DPDK (mode
// dpdk-pmd, like kernel mode, needs dpdk_initialized: the VF representor is a type=dpdk port).
// A port of type vdpa in mode dpdk-pmd applied through the API gets its job dpdk-vdpa-<port>,
// which the daemon starts: the stand-in runs as a child of the plugin process with the argv
// the plugin plans (vdpa.DPDKVDPAArgs), and the built vsctl's `plugin stats vdpa`, the API's
// PluginStats and /metrics show it running with process_up 1. A kill -9 of the stand-in is
// followed by a restart (process_restarts_total 1). A kill -9 of the plugin process takes its
// stand-in with it; the host restarts the plugin and the daemon starts the job again in the
// new process. Deleting the port stops the job: no stand-in is left (/proc). A dpdk-pmd port
// whose name is too long for its job's name is refused as invalid, naming the limit.
func TestVDPAPMDJob(t *testing.T) {
	lab.Require(t, lab.NeedDPDK, lab.NeedNetns)
	ctx := timeout(t, 5*time.Minute)
	vsns := lab.NewNetns(t)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK, Netns: vsns})
	si := standintest.Install(t)
	standIn := si.Path

	l := newDaemonLab(t, db)
	pdir, sum := buildPlugin(t, l.dir, "../../plugins/vdpa", "ovsplane-plugin-vdpa")
	pluginBin := filepath.Join(pdir, "ovsplane-plugin-vdpa")
	metricsAddr := testkit.FreeTCPAddr(t)
	conf := fmt.Sprintf(`
plugin_dir: %s
metrics:
  address: %s
plugins:
  - name: vdpa
    path: ovsplane-plugin-vdpa
    sha256: %s
    config:
      simulate: %s
      dpdk_vdpa: %s
bridges:
  - name: br0
    datapath_type: netdev
`, pdir, metricsAddr, sum, vdpaFixture(t), standIn)
	if err := os.WriteFile(l.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	l.start(ctx)
	plugin, err := pluginByName(ctx, l, "vdpa")
	if err != nil || plugin.GetState() != ovsplanev1.PluginState_PLUGIN_STATE_RUNNING {
		t.Fatalf("plugin vdpa: %+v, %v", plugin, err)
	}
	pid1 := int(plugin.GetPid())

	// 1. The port: the daemon writes the representor and starts the job.
	const port, job = "pmd0", "dpdk-vdpa-pmd0"
	const vf = "0000:65:00.2" // VF 0 of vdpaPF in the fixture
	applied := time.Now()
	resp, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0",
		Port: vdpaPort(port, map[string]string{"pf": vdpaPF, "vf": "0", "mac": "02:11:22:33:44:10", "mode": "dpdk-pmd"})}))
	if err != nil {
		t.Fatalf("ApplyPort %s: %v", port, err)
	}
	answered := time.Since(applied)
	info := resp.Msg.GetPort()
	t.Logf("%s: status %v %q; plugin status %q; endpoints %v", port, info.GetStatus().GetState(), info.GetStatus().GetError(), info.GetPluginStatus(), info.GetEndpoints())
	if ep := info.GetEndpoints(); ep["dpdk-vdpa-job"] != job || ep["vhost-user"] != "/run/ovsplane/vdpa/"+port+"-0" {
		t.Errorf("%s: endpoints %v, want dpdk-vdpa-job %s and the vhost-user socket", port, ep, job)
	}
	checkVDPARows(t, db, port, 0)

	wantArgv := append([]string{standIn}, vdpa.DPDKVDPAArgs(port, vf, vdpa.DefaultSocketDir)...)
	// runOf waits for a live stand-in run whose parent is the plugin process ppid, and returns it.
	runOf := func(what string, ppid int) standintest.Run {
		t.Helper()
		var run standintest.Run
		lab.WaitFor(t, 30*time.Second, what, func(context.Context) error {
			for _, r := range si.Runs(t) {
				if r.PPID == ppid && standintest.Alive(r.PID) {
					run = r
					return nil
				}
			}
			return fmt.Errorf("no live stand-in child of %d; runs %v, live %v", ppid, si.Runs(t), si.PIDs(t))
		})
		if !slices.Equal(run.Argv, wantArgv) {
			t.Errorf("%s: stand-in argv %q, want %q", what, run.Argv, wantArgv)
		}
		return run
	}
	first := runOf("the stand-in started by the daemon's job", pid1)
	t.Logf("job running %v after ApplyPort was sent (ApplyPort answered in %v)", time.Since(applied).Round(time.Millisecond), answered.Round(time.Millisecond))

	// running waits until the daemon's view of the job (PluginStats) is running with a sample
	// of process_up 1 for pid and the given restarts and daemon-side starts, and returns it.
	running := func(what string, pid int, restarts float64, starts int32) *ovsplanev1.JobInfo {
		t.Helper()
		var j *ovsplanev1.JobInfo
		lab.WaitFor(t, 30*time.Second, what, func(ctx context.Context) error {
			jobs, err := jobsOf(ctx, l, "vdpa")
			if err != nil {
				return err
			}
			j = jobs[job]
			if j.GetState() != ovsplanev1.JobState_JOB_STATE_RUNNING || j.GetPort() != port || j.GetType() != "dpdk-vdpa" ||
				j.GetStarts() != starts || metricOf(j, "process_up") != 1 || metricOf(j, "process_pid") != float64(pid) ||
				metricOf(j, "process_restarts_total") != restarts {
				return fmt.Errorf("job %s: %v", job, j)
			}
			return nil
		})
		return j
	}
	running("PluginStats: the job running", first.PID, 0, 1)

	// vsctl plugin stats vdpa (the built binary) and /metrics say the same.
	api := "unix:" + filepath.Join(l.dir, "ovsplaned.sock")
	out, stderr, code := runTool(ctx, nil, vsctlBinary(t), "--daemon="+api, "plugin", "stats", "vdpa")
	t.Logf("vsctl plugin stats vdpa:\n%s", out)
	if code != 0 || !regexp.MustCompile(`(?m)^`+job+`\s+dpdk-vdpa\s+`+port+`\s+running\s+1\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+process_up 1 gauge`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+process_restarts_total 0 counter`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+process_pid `+strconv.Itoa(first.PID)+` gauge`).MatchString(out) {
		t.Errorf("vsctl plugin stats vdpa: exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}
	body, err := scrape(ctx, metricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{
		`ovsplane_job_process_up{job="` + job + `",plugin="vdpa"}`:                               1,
		`ovsplane_job_process_pid{job="` + job + `",plugin="vdpa"}`:                              float64(first.PID),
		`ovsplane_jobs_up{job="` + job + `",plugin="vdpa",port="` + port + `",type="dpdk-vdpa"}`: 1,
	}
	for s, want := range series {
		if v, ok := promValue(body, s); !ok || v != want {
			t.Errorf("/metrics %s = %v (present %v), want %v", s, v, ok, want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics, job lines:\n%s", strings.Join(regexp.MustCompile(`(?m)^ovsplane_jobs?_.*$`).FindAllString(body, -1), "\n"))
	}

	// 2. kill -9 of the stand-in: the plugin restarts it.
	killed := time.Now()
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var second standintest.Run
	lab.WaitFor(t, 30*time.Second, "the stand-in restarted", func(context.Context) error {
		for _, r := range si.Runs(t) {
			if r.PID != first.PID && r.PPID == pid1 && standintest.Alive(r.PID) {
				second = r
				return nil
			}
		}
		return fmt.Errorf("no second run")
	})
	t.Logf("stand-in restarted %v after its kill -9", time.Since(killed).Round(time.Millisecond))
	if !slices.Equal(second.Argv, wantArgv) {
		t.Errorf("restarted stand-in argv %q, want %q", second.Argv, wantArgv)
	}
	j := running("PluginStats: the restart counted", second.PID, 1, 1)
	if v := metricOf(j, "process_last_exit_code"); v != -9 {
		t.Errorf("process_last_exit_code %v after kill -9, want -9", v)
	}
	if standintest.Alive(first.PID) {
		t.Errorf("the killed stand-in %d is still alive", first.PID)
	}

	// 3. kill -9 of the plugin process: its stand-in goes with it; the host restarts the plugin
	// and the daemon starts the job again in the new process.
	killed = time.Now()
	if err := syscall.Kill(pid1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var pid2 int
	lab.WaitFor(t, 30*time.Second, "the plugin restarted", func(ctx context.Context) error {
		p, err := pluginByName(ctx, l, "vdpa")
		if err != nil {
			return err
		}
		if p.GetState() != ovsplanev1.PluginState_PLUGIN_STATE_RUNNING || p.GetPid() == 0 || int(p.GetPid()) == pid1 {
			return fmt.Errorf("plugin %v pid %d (was %d)", p.GetState(), p.GetPid(), pid1)
		}
		pid2 = int(p.GetPid())
		return nil
	})
	t.Logf("plugin running again (pid %d) %v after its kill -9", pid2, time.Since(killed).Round(time.Millisecond))
	third := runOf("the job started again in the restarted plugin", pid2)
	t.Logf("job running again in the new plugin %v after the kill -9 of the old one", time.Since(killed).Round(time.Millisecond))
	if standintest.Alive(second.PID) {
		t.Errorf("the stand-in %d of the killed plugin %d is still alive", second.PID, pid1)
	}
	if pids := si.PIDs(t); !slices.Equal(pids, []int{third.PID}) {
		t.Errorf("live stand-ins %v, want only %d (the restarted plugin's)", pids, third.PID)
	}
	if pids := pluginPIDs(t, pluginBin); !slices.Equal(pids, []int{pid2}) {
		t.Errorf("vdpa plugin processes %v, want only %d", pids, pid2)
	}
	running("PluginStats: the job in the restarted plugin", third.PID, 0, 2)

	// 4. Deleting the port stops the job: no stand-in is left.
	if _, err := l.api.DeletePort(ctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: port})); err != nil {
		t.Fatalf("DeletePort %s: %v", port, err)
	}
	standInGone := time.Now()
	lab.WaitFor(t, 30*time.Second, "no stand-in left after the port's deletion", func(context.Context) error {
		if pids := si.PIDs(t); len(pids) > 0 {
			return fmt.Errorf("stand-ins alive: %v", pids)
		}
		return nil
	})
	t.Logf("stand-in gone %v after DeletePort answered", time.Since(standInGone).Round(time.Millisecond))
	lab.WaitFor(t, 30*time.Second, "the job gone from PluginStats", func(ctx context.Context) error {
		jobs, err := jobsOf(ctx, l, "vdpa")
		if err == nil && jobs[job] != nil {
			err = fmt.Errorf("%s still there: %v", job, jobs[job])
		}
		return err
	})
	if n := rowCount(t, db, "Port", port) + rowCount(t, db, "Interface", port); n != 0 {
		t.Errorf("deleted port %s: %d rows left", port, n)
	}
	if pluginLog := l.logs[0].String(); !strings.Contains(pluginLog, "exiting on terminated") {
		t.Errorf("the stand-in was not stopped by SIGTERM (no 'exiting on terminated' in the daemon's log)")
	}

	// 5. A port name the daemon and the vdpa library accept (here 60 bytes) but too long for its
	// job name, dpdk-vdpa-<port>, at most 64 bytes: refused up front as invalid, naming the
	// limit, not after the host work as a plugin answer the daemon cannot run.
	long := "pmd-" + strings.Repeat("x", 56)
	runs := len(si.Runs(t))
	_, err = l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0",
		Port: vdpaPort(long, map[string]string{"pf": vdpaPF, "vf": "0", "mode": "dpdk-pmd"})}))
	t.Logf("dpdk-pmd port of a %d-byte name: %v", len(long), err)
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `): name: "`+long+`" is 60 bytes`) ||
		!strings.Contains(err.Error(), "dpdk-vdpa-") || !strings.Contains(err.Error(), "54 bytes") {
		t.Errorf("ApplyPort of dpdk-pmd port %s: %v, want InvalidArgument naming its job's name limit", long, err)
	}
	if n := rowCount(t, db, "Port", long) + rowCount(t, db, "Interface", long); n != 0 {
		t.Errorf("refused port %s: %d rows written", long, n)
	}
	if n := len(si.Runs(t)); n != runs {
		t.Errorf("refused port %s: %d stand-in runs, want %d as before", long, n, runs)
	}
}
