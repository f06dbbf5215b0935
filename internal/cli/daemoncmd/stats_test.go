package daemoncmd_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
)

// `plugin stats NAME` shows the plugin's jobs from PluginStats as served by the real API
// server: a table with each job's metrics and error under it, or JSON; exit 0 only when every
// job runs; a name the config does not list is refused naming it.
func TestPluginStats(t *testing.T) {
	fake, addr := serve(t)
	fake.SetPlugins(testPlugins)
	at := time.Date(2026, 12, 3, 20, 41, 7, 412000000, time.UTC)
	fake.SetJobs("veth", []model.JobInfo{
		{Plugin: "veth", Name: "clock", Type: "ticker", State: model.JobRunning, Status: "ticking", Starts: 2, SampleTime: at,
			Metrics: []model.JobMetric{{Name: "ticks", Kind: "counter", Value: 37}, {Name: "restarts_total", Kind: "counter", Value: 0},
				{Name: "queue_depth", Kind: "gauge", Value: 0.5, Labels: map[string]string{"queue": "rx 0", "dir": "in"}}}},
	})
	r := run(t, nil, false, "--daemon="+addr, "plugin", "stats", "veth")
	for _, s := range []string{"JOB", "SAMPLED", "clock", "ticker", "running", "2026-12-03T20:41:07.412Z",
		"  ticks 37 counter", "  restarts_total 0 counter", `  queue_depth{dir="in",queue="rx 0"} 0.5 gauge`} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	if r.code != 0 {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}

	fake.SetJobs("veth", []model.JobInfo{
		{Plugin: "veth", Name: "clock", Type: "ticker", State: model.JobRunning},
		{Plugin: "veth", Name: "vp1-clock", Type: "ticker", Port: "vp1", State: model.JobWaiting, Error: `plugin "veth" is restarting`},
	})
	r = run(t, nil, false, "--daemon="+addr, "--format=json", "plugin", "stats", "veth")
	var got []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	if got[1]["port"] != "vp1" || got[1]["state"] != "waiting" || !strings.Contains(got[1]["error"].(string), "restarting") {
		t.Errorf("second job: %v", got[1])
	}
	if r.code != 1 {
		t.Errorf("a waiting job: exit %d, want 1", r.code)
	}

	r = run(t, nil, false, "--daemon="+addr, "plugin", "stats", "nope")
	if r.code != 1 || !strings.Contains(r.stderr, `no plugin named "nope"`) {
		t.Errorf("unknown plugin: exit %d, stderr %q", r.code, r.stderr)
	}
}
