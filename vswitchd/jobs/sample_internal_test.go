package jobs

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
)

func known(job string) bool { return job == "j" }

// Every bad sample is refused with what is wrong; a good one is kept with kinds by name.
func TestCheckSample(t *testing.T) {
	many := make([]api.Metric, limits.MaxMetricsPerSample+1)
	for i := range many {
		many[i] = api.Metric{Name: fmt.Sprintf("m%d", i)}
	}
	labels := map[string]string{}
	for i := range limits.MaxMetricLabels + 1 {
		labels[fmt.Sprintf("l%d", i)] = "v"
	}
	for _, tc := range []struct {
		name string
		s    api.StatsSample
		want string
	}{
		{"unknown job", api.StatsSample{Job: "other"}, `sample of job "other", which is not one of the plugin's running jobs`},
		{"too many", api.StatsSample{Job: "j", Metrics: many}, "sample of 257 metrics, more than 256"},
		{"NaN", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "x", Value: math.NaN()}}}, "metrics[0] (x): value NaN is not a finite number"},
		{"Inf", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "x", Value: math.Inf(-1)}}}, "value -Inf is not a finite number"},
		{"negative counter", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "x", Kind: api.MetricCounter, Value: -1}}}, "counter value -1 is negative"},
		{"bad name", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "Bad-Name"}}}, `metric name "Bad-Name" must be`},
		{"long name", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: strings.Repeat("a", 65)}}}, "at most 64 bytes"},
		{"kind", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "x", Kind: 7}}}, "unknown kind 7"},
		{"reserved label", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "x", Labels: map[string]string{"job": "y"}}}}, `label "job" is set by the daemon`},
		{"label value", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "x", Labels: map[string]string{"q": "\xff"}}}}, `label "q": value is not UTF-8`},
		{"labels", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "x", Labels: labels}}}, "9 labels, more than 8"},
		{"twice", api.StatsSample{Job: "j", Metrics: []api.Metric{{Name: "x"}, {Name: "x"}}}, "metrics[1] (x): the same name and labels"},
	} {
		_, _, err := checkSample(tc.s, known)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	at, ms, err := checkSample(api.StatsSample{Job: "j", TimeUnixNano: 1e18, Metrics: []api.Metric{
		{Name: "x", Kind: api.MetricCounter, Value: 3}, {Name: "x", Kind: api.MetricGauge, Value: 1, Labels: map[string]string{"q": "0"}},
		{Name: "y"}}}, known)
	if err != nil || at.UnixNano() != 1e18 || len(ms) != 3 || ms[0].Kind != "counter" || ms[1].Kind != "gauge" || ms[2].Kind != "untyped" {
		t.Errorf("good sample: %v %v %v", at, ms, err)
	}
}

// FuzzCheckSample: whatever a plugin sends, checkSample does not panic and what it keeps
// obeys the bounds the metrics exporter relies on.
func FuzzCheckSample(f *testing.F) {
	f.Add("j", "ticks", int32(2), 1.5, "q", "rx", uint8(1))
	f.Add("j", "Bad", int32(9), math.NaN(), "job", "\xff", uint8(300%256))
	f.Fuzz(func(t *testing.T, job, name string, kind int32, value float64, lk, lv string, n uint8) {
		s := api.StatsSample{Job: job}
		for i := range int(n) {
			s.Metrics = append(s.Metrics, api.Metric{Name: fmt.Sprintf("%s%d", name, i%3), Kind: api.MetricKind(kind), Value: value,
				Labels: map[string]string{lk: lv}})
		}
		_, ms, err := checkSample(s, known)
		if err != nil {
			return
		}
		if job != "j" || len(ms) > limits.MaxMetricsPerSample {
			t.Fatalf("kept %d metrics of job %q", len(ms), job)
		}
		for _, m := range ms {
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || limits.CheckMetricName(m.Name) != nil {
				t.Fatalf("kept %+v", m)
			}
			for k, v := range m.Labels {
				if limits.CheckLabel(k, v) != nil || !utf8.ValidString(v) {
					t.Fatalf("kept label %q=%q", k, v)
				}
			}
		}
	})
}
