package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
)

// The jobs' states and samples are served in the exposition format; families on which two
// jobs disagree about the kind keep the first and the scrape does not fail.
func TestJobsCollector(t *testing.T) {
	m := New("v", "embedded", nil)
	at := time.Unix(1700000000, 500000000)
	m.RegisterJobs(func() []model.JobInfo {
		return []model.JobInfo{
			{Plugin: "tick", Name: "clock", Type: "ticker", State: model.JobRunning, SampleTime: at, Metrics: []model.JobMetric{
				{Name: "ticks", Kind: "counter", Value: 37},
				{Name: "depth", Kind: "gauge", Value: 2.5, Labels: map[string]string{"queue": "rx"}},
				{Name: "raw", Kind: "untyped", Value: 1}}},
			{Plugin: "tick", Name: "p1-clock", Type: "ticker", Port: "p1", State: model.JobWaiting, Metrics: []model.JobMetric{
				{Name: "ticks_total", Kind: "gauge", Value: 9},    // another kind than clock's ticks_total: left out
				{Name: "ticks_total", Kind: "counter", Value: 11}, // the same family as clock's ticks
				{Name: "depth", Kind: "gauge", Value: 3, Labels: map[string]string{"queue": "tx", "lane": "0"}}}},
			// a refused job whose name is no label value: left out, the scrape still works
			{Plugin: "tick", Name: "bad\xff", Type: "\xff", State: model.JobError, SampleTime: at, Metrics: []model.JobMetric{
				{Name: "lost", Kind: "gauge", Value: 4}}},
		}
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	out := string(body)
	if rec.Code != 200 {
		t.Fatalf("scrape: %d\n%s", rec.Code, out)
	}
	for _, want := range []string{
		`ovsplane_jobs_up{job="clock",plugin="tick",port="",type="ticker"} 1`,
		`ovsplane_jobs_up{job="p1-clock",plugin="tick",port="p1",type="ticker"} 0`,
		`ovsplane_jobs_sample_timestamp_seconds{job="clock",plugin="tick"} 1.7000000005e+09`,
		"# TYPE ovsplane_job_ticks_total counter",
		`ovsplane_job_ticks_total{job="clock",plugin="tick"} 37`,
		"# TYPE ovsplane_job_depth gauge",
		`ovsplane_job_depth{job="clock",plugin="tick",queue="rx"} 2.5`,
		`ovsplane_job_depth{job="p1-clock",lane="0",plugin="tick",queue="tx"} 3`,
		`ovsplane_job_raw{job="clock",plugin="tick"} 1`,
		`ovsplane_job_ticks_total{job="p1-clock",plugin="tick"} 11`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, `job="p1-clock",plugin="tick"} 9`) || strings.Contains(out, "ovsplane_job_lost") || strings.Contains(out, "bad") {
		t.Errorf("the metric of the other kind was exported:\n%s", out)
	}
}
