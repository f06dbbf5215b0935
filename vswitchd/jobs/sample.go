package jobs

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// maxProblems bounds the problems one refusal lists.
const maxProblems = 5

// checkSample checks a stats sample of a plugin whose jobs are known: the job is one of
// them; at most limits.MaxMetricsPerSample metrics; names and labels by limits'
// rules; a known kind; a finite value (a counter's not negative); no two metrics with the same
// name and labels. It returns the sample as the daemon keeps it, or an error listing the first
// problems.
func checkSample(s api.StatsSample, known func(job string) bool) (time.Time, []model.JobMetric, error) {
	var ps []string
	add := func(format string, args ...any) {
		if len(ps) < maxProblems {
			ps = append(ps, fmt.Sprintf(format, args...))
		}
	}
	if !known(s.Job) {
		return time.Time{}, nil, fmt.Errorf("sample of job %q, which is not one of the plugin's running jobs", clip(s.Job))
	}
	if len(s.Metrics) > limits.MaxMetricsPerSample {
		return time.Time{}, nil, fmt.Errorf("job %q: sample of %d metrics, more than %d (limits.MaxMetricsPerSample)", s.Job, len(s.Metrics), limits.MaxMetricsPerSample)
	}
	out := make([]model.JobMetric, 0, len(s.Metrics))
	seen := make(map[string]bool, len(s.Metrics))
	for i, m := range s.Metrics {
		f := fmt.Sprintf("metrics[%d]", i)
		if err := limits.CheckMetricName(m.Name); err != nil {
			add("%s: %v", f, err)
			continue
		}
		kind, ok := kindName(m.Kind)
		if !ok {
			add("%s (%s): unknown kind %d", f, m.Name, m.Kind)
		}
		switch {
		case math.IsNaN(m.Value) || math.IsInf(m.Value, 0):
			add("%s (%s): value %v is not a finite number", f, m.Name, m.Value)
		case m.Kind == api.MetricCounter && m.Value < 0:
			add("%s (%s): counter value %v is negative", f, m.Name, m.Value)
		}
		if len(m.Labels) > limits.MaxMetricLabels {
			add("%s (%s): %d labels, more than %d (limits.MaxMetricLabels)", f, m.Name, len(m.Labels), limits.MaxMetricLabels)
			continue
		}
		key := m.Name
		for _, k := range sortedKeys(m.Labels) {
			if err := limits.CheckLabel(k, m.Labels[k]); err != nil {
				add("%s (%s): %v", f, m.Name, err)
			}
			key += "\x00" + k + "\x00" + m.Labels[k]
		}
		if seen[key] {
			add("%s (%s): the same name and labels as an earlier metric", f, m.Name)
		}
		seen[key] = true
		out = append(out, model.JobMetric{Name: m.Name, Kind: kind, Value: m.Value, Labels: m.Labels})
	}
	if len(ps) > 0 {
		return time.Time{}, nil, fmt.Errorf("job %q: %s", s.Job, strings.Join(ps, "; "))
	}
	t := time.Unix(0, s.TimeUnixNano)
	if s.TimeUnixNano <= 0 {
		t = time.Now()
	}
	return t, out, nil
}

// kindName is a metric kind's name in model.JobMetric.
func kindName(k api.MetricKind) (string, bool) {
	switch k {
	case api.MetricGauge:
		return "gauge", true
	case api.MetricCounter:
		return "counter", true
	case api.MetricUnspecified:
		return "untyped", true
	}
	return "", false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
