package convert

import (
	"maps"
	"time"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

var (
	jobStates = map[model.JobState]v1.JobState{
		model.JobWaiting: v1.JobState_JOB_STATE_WAITING,
		model.JobRunning: v1.JobState_JOB_STATE_RUNNING,
		model.JobError:   v1.JobState_JOB_STATE_ERROR,
	}
	jobStatesBack = reverse(jobStates)
	metricKinds   = map[string]v1.MetricKind{
		"untyped": v1.MetricKind_METRIC_KIND_UNSPECIFIED,
		"gauge":   v1.MetricKind_METRIC_KIND_GAUGE,
		"counter": v1.MetricKind_METRIC_KIND_COUNTER,
	}
	metricKindsBack = reverse(metricKinds)
)

// JobsToProto converts a plugin's jobs, keeping the order. A sample time is RFC 3339 in UTC
// with nanoseconds; none is "".
func JobsToProto(js []model.JobInfo) []*v1.JobInfo {
	out := make([]*v1.JobInfo, 0, len(js))
	for _, j := range js {
		m := &v1.JobInfo{Plugin: j.Plugin, Name: j.Name, Type: j.Type, Port: j.Port, State: jobStates[j.State],
			Error: j.Error, Status: j.Status, Starts: clampInt32(j.Starts)}
		if !j.SampleTime.IsZero() {
			m.SampleTime = j.SampleTime.UTC().Format(time.RFC3339Nano)
		}
		for _, x := range j.Metrics {
			m.Metrics = append(m.Metrics, &v1.JobMetric{Name: x.Name, Kind: metricKinds[x.Kind], Value: x.Value, Labels: maps.Clone(x.Labels)})
		}
		out = append(out, m)
	}
	return out
}

// JobsFromProto converts job messages back; an unknown state becomes "unknown", an
// unparsable sample time none.
func JobsFromProto(ms []*v1.JobInfo) []model.JobInfo {
	out := make([]model.JobInfo, 0, len(ms))
	for _, m := range ms {
		j := model.JobInfo{Plugin: m.GetPlugin(), Name: m.GetName(), Type: m.GetType(), Port: m.GetPort(),
			State: jobStatesBack[m.GetState()], Error: m.GetError(), Status: m.GetStatus(), Starts: int(m.GetStarts())}
		if j.State == "" {
			j.State = "unknown"
		}
		if t, err := time.Parse(time.RFC3339Nano, m.GetSampleTime()); err == nil {
			j.SampleTime = t
		}
		for _, x := range m.GetMetrics() {
			kind, ok := metricKindsBack[x.GetKind()]
			if !ok {
				kind = "untyped"
			}
			j.Metrics = append(j.Metrics, model.JobMetric{Name: x.GetName(), Kind: kind, Value: x.GetValue(), Labels: maps.Clone(x.GetLabels())})
		}
		out = append(out, j)
	}
	return out
}
