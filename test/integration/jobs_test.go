//go:build linux

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// jobsOf returns the daemon's view of plugin's data-path jobs, by name.
func jobsOf(ctx context.Context, l *daemonLab, plugin string) (map[string]*ovsplanev1.JobInfo, error) {
	resp, err := l.api.PluginStats(ctx, connect.NewRequest(&ovsplanev1.PluginStatsRequest{Plugin: plugin}))
	if err != nil {
		return nil, err
	}
	out := map[string]*ovsplanev1.JobInfo{}
	for _, j := range resp.Msg.GetJobs() {
		out[j.GetName()] = j
	}
	return out, nil
}

// metricOf returns the value of a metric of a job's latest sample (-1 when absent).
func metricOf(j *ovsplanev1.JobInfo, name string) float64 {
	for _, m := range j.GetMetrics() {
		if m.GetName() == name {
			return m.GetValue()
		}
	}
	return -1
}

// scrape returns the daemon's /metrics.
func scrape(ctx context.Context, addr string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/metrics: %s: %s", resp.Status, b)
	}
	return string(b), err
}

// promValue returns the value of the series line (name and labels as written) in a scrape.
func promValue(body, series string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// TestDataPathJobs runs the real ovsplaned with a real plugin process (tickplugin, whose job
// type counts ticks) on a real ovsdb-server and ovs-vswitchd (dummy datapath): the config
// file's jobs and the jobs of the plugin's ports (one from the config file, one applied
// through the API) run, and their samples reach the API (PluginStats), Prometheus (/metrics)
// and the built vsctl (`plugin stats`). Jobs whose samples are bad (NaN, 300 metrics, a bad
// name) are refused with a log line naming them while the others keep reporting. After kill -9
// of the plugin every job is started again in the new process and its stats resume;
// deleting the API port stops its job.
func TestDataPathJobs(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS)
	ctx := timeout(t, 4*time.Minute)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	l := newDaemonLab(t, db)
	pdir, sum := buildPlugin(t, l.dir, "../../vswitchd/jobs/testdata/tickplugin", "tick")
	metricsAddr := testkit.FreeTCPAddr(t)
	conf := fmt.Sprintf(`
plugin_dir: %s
metrics:
  address: %s
plugins:
  - name: tick
    path: tick
    sha256: %s
    jobs:
      - {name: clock, type: ticker, config: {every_ms: 10}}
      - {name: bad-nan, type: ticker, config: {bad: nan}}
      - {name: bad-many, type: ticker, config: {bad: many}}
      - {name: bad-name, type: ticker, config: {bad: name}}
      - {name: wrong-type, type: nosuch}
bridges:
  - name: br0
    datapath_type: netdev
    ports:
      - name: tcfg
        interfaces:
          - {name: tcfg, type: tick}
`, pdir, metricsAddr, sum)
	if err := os.WriteFile(l.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.BuildOnce(t, ovsplanedPkg)
	started := time.Now()
	daemon := l.start(ctx)
	if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0",
		Port: &ovsplanev1.Port{Name: "tp1", Interfaces: []*ovsplanev1.Interface{{Name: "tp1", Type: "tick"}}}})); err != nil {
		t.Fatalf("ApplyPort tp1: %v", err)
	}

	// ticking waits until every named job runs and has a sample with ticks > 0 taken after
	// since, and returns the jobs.
	ticking := func(what string, since time.Time, names ...string) map[string]*ovsplanev1.JobInfo {
		t.Helper()
		var jobs map[string]*ovsplanev1.JobInfo
		lab.WaitFor(t, 30*time.Second, what, func(ctx context.Context) error {
			var err error
			if jobs, err = jobsOf(ctx, l, "tick"); err != nil {
				return err
			}
			for _, n := range names {
				j := jobs[n]
				at, _ := time.Parse(time.RFC3339Nano, j.GetSampleTime())
				if j.GetState() != ovsplanev1.JobState_JOB_STATE_RUNNING || metricOf(j, "ticks") <= 0 || at.Before(since) {
					return fmt.Errorf("job %s: %v", n, j)
				}
			}
			return nil
		})
		return jobs
	}
	jobs := ticking("the config's, the config port's and the API port's jobs ticking", started, "clock", "tcfg-ticks", "tp1-ticks")
	t.Logf("first samples %v after the daemon started", time.Since(started).Round(time.Millisecond))
	if j := jobs["tp1-ticks"]; j.GetPort() != "tp1" || j.GetStarts() != 1 || j.GetStatus() != "ticking every 20ms" || metricOf(j, "every_ms") != 20 {
		t.Errorf("tp1-ticks: %v", j)
	}
	if j := jobs["clock"]; j.GetPort() != "" || j.GetStarts() != 1 {
		t.Errorf("clock: %v", j)
	}

	// A port whose plugin asks for more jobs than the daemon runs per port is refused whole,
	// and what the plugin attached is detached.
	_, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0",
		Port: &ovsplanev1.Port{Name: "tpx", Interfaces: []*ovsplanev1.Interface{{Name: "tpx", Type: "tick", Options: map[string]string{"jobs": "many"}}}}}))
	// The host's own check of the answer (api.ValidateAttachment, which sdktest applies too)
	// names the plugin, the port and the bound.
	if err == nil || !strings.Contains(err.Error(), `plugin "tick"`) || !strings.Contains(err.Error(), `port br0/tpx: jobs: 9 jobs, more than 8 (limits.MaxJobsPerPort)`) {
		t.Errorf("ApplyPort tpx with 9 jobs: %v", err)
	}
	lab.WaitFor(t, 10*time.Second, "tpx detached", func(context.Context) error {
		if !regexp.MustCompile(`port detached.*port=tpx`).MatchString(l.logs[0].String()) {
			return fmt.Errorf("no line")
		}
		return nil
	})
	if out, _, err := db.VsctlErr(ctx, "list-ports", "br0"); err != nil || strings.Contains(out, "tpx") {
		t.Errorf("ports of br0: %q, %v", out, err)
	}

	// Bad samples are refused, each with what is wrong; the job has no sample.
	lab.WaitFor(t, 20*time.Second, "the bad samples refused", func(ctx context.Context) error {
		jobs, err := jobsOf(ctx, l, "tick")
		if err != nil {
			return err
		}
		for name, want := range map[string]string{
			"bad-nan":  "is not a finite number",
			"bad-many": "sample of 302 metrics, more than 256",
			"bad-name": `metric name "Bad-Name" must be`,
		} {
			if j := jobs[name]; !strings.Contains(j.GetError(), "last sample refused: ") || !strings.Contains(j.GetError(), want) || len(j.GetMetrics()) != 0 {
				return fmt.Errorf("job %s: %v", name, j)
			}
		}
		if j := jobs["wrong-type"]; j.GetState() != ovsplanev1.JobState_JOB_STATE_ERROR || !strings.Contains(j.GetError(), `plugin "tick" serves no job type "nosuch" (its types: tick, ticker)`) {
			return fmt.Errorf("job wrong-type: %v", j)
		}
		return nil
	})
	for _, job := range []string{"bad-nan", "bad-many", "bad-name"} {
		if !regexp.MustCompile(`plugin sent a stats sample the daemon refuses.*job=` + job + ` .*error=`).MatchString(l.logs[0].String()) {
			t.Errorf("no log line for the refused samples of %s", job)
		}
	}

	// Prometheus: the samples and the states.
	body, err := scrape(ctx, metricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{"clock", "tcfg-ticks", "tp1-ticks"} {
		if v, ok := promValue(body, `ovsplane_job_ticks_total{job="`+job+`",plugin="tick"}`); !ok || v <= 0 {
			t.Errorf("ovsplane_job_ticks_total of %s: %v %v", job, v, ok)
		}
	}
	if v, ok := promValue(body, `ovsplane_job_every_ms{job="tp1-ticks",plugin="tick",unit="ms"}`); !ok || v != 20 {
		t.Errorf("ovsplane_job_every_ms of tp1-ticks: %v %v", v, ok)
	}
	if v, ok := promValue(body, `ovsplane_jobs_up{job="tp1-ticks",plugin="tick",port="tp1",type="ticker"}`); !ok || v != 1 {
		t.Errorf("ovsplane_jobs_up of tp1-ticks: %v %v", v, ok)
	}
	if v, ok := promValue(body, `ovsplane_jobs_up{job="wrong-type",plugin="tick",port="",type="nosuch"}`); !ok || v != 0 {
		t.Errorf("ovsplane_jobs_up of wrong-type: %v %v", v, ok)
	}
	if m := regexp.MustCompile(`(?m)^ovsplane_job_.*job="bad-.*$|Bad-Name`).FindString(body); m != "" {
		t.Errorf("a refused sample reached /metrics: %s", m)
	}

	// vsctl plugin stats, the built binary.
	api := "unix:" + filepath.Join(l.dir, "ovsplaned.sock")
	out, stderr, code := runTool(ctx, nil, vsctlBinary(t), "--daemon="+api, "plugin", "stats", "tick")
	if !regexp.MustCompile(`(?m)^tp1-ticks\s+ticker\s+tp1\s+running\s+1\s+20\d\d-`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+ticks [1-9]\d* counter`).MatchString(out) || !strings.Contains(out, `every_ms{unit="ms"} 20 gauge`) ||
		!strings.Contains(out, "error: last sample refused") || code != 1 {
		t.Errorf("vsctl plugin stats tick: exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}

	// kill -9 the plugin: every job starts again in the new process and its stats resume.
	p, err := pluginByName(ctx, l, "tick")
	if err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	if err := syscall.Kill(int(p.GetPid()), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	jobs = ticking("the jobs ticking again in the restarted plugin", killedAt, "clock", "tcfg-ticks", "tp1-ticks")
	t.Logf("stats resumed %v after SIGKILL of the plugin", time.Since(killedAt).Round(time.Millisecond))
	q, err := pluginByName(ctx, l, "tick")
	if err != nil || q.GetPid() == p.GetPid() {
		t.Fatalf("plugin after the kill: %v %v", q, err)
	}
	for _, n := range []string{"clock", "tcfg-ticks", "tp1-ticks"} {
		if jobs[n].GetStarts() != 2 {
			t.Errorf("job %s: starts %d after one plugin restart, want 2", n, jobs[n].GetStarts())
		}
	}

	// Deleting the port stops its job; the others run on.
	if _, err := l.api.DeletePort(ctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: "tp1"})); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 20*time.Second, "tp1's job gone", func(ctx context.Context) error {
		jobs, err := jobsOf(ctx, l, "tick")
		if err == nil && jobs["tp1-ticks"] != nil {
			err = fmt.Errorf("tp1-ticks still there: %v", jobs["tp1-ticks"])
		}
		return err
	})
	lab.WaitFor(t, 10*time.Second, "the plugin's log of tp1-ticks stopped", func(context.Context) error {
		if !regexp.MustCompile(`job stopped.*tp1-ticks|tp1-ticks.*job stopped`).MatchString(l.logs[0].String()) {
			return fmt.Errorf("no line")
		}
		return nil
	})
	ticking("clock ticking after the port is gone", time.Now(), "clock", "tcfg-ticks")

	// kill -9 the daemon (its plugin goes with it): the restarted daemon runs the jobs of the
	// ports it adopts from OVSDB again, the API port's included.
	if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0",
		Port: &ovsplanev1.Port{Name: "tp2", Interfaces: []*ovsplanev1.Interface{{Name: "tp2", Type: "tick"}}}})); err != nil {
		t.Fatalf("ApplyPort tp2: %v", err)
	}
	ticking("tp2's job ticking", time.Now(), "tp2-ticks")
	daemon.kill()
	<-daemon.Done()
	restartedAt := time.Now()
	l.start(ctx)
	jobs = ticking("the jobs ticking in the restarted daemon", restartedAt, "clock", "tcfg-ticks", "tp2-ticks")
	t.Logf("stats back %v after the daemon's restart", time.Since(restartedAt).Round(time.Millisecond))
	if j := jobs["tp2-ticks"]; j.GetPort() != "tp2" || j.GetStarts() != 1 {
		t.Errorf("tp2-ticks after the daemon's restart: %v", j)
	}
	if _, ok := jobs["tp1-ticks"]; ok {
		t.Errorf("the deleted port's job is back")
	}
}
