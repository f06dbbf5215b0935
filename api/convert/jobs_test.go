package convert

import (
	"reflect"
	"testing"
	"time"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// Jobs survive the round trip through the API's messages: states, kinds, labels and the
// sample time to the nanosecond (as RFC 3339 text in UTC).
func TestJobsRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 3, 20, 41, 7, 412000001, time.UTC)
	in := []model.JobInfo{
		{Plugin: "tick", Name: "clock", Type: "ticker", State: model.JobRunning, Status: "ticking", Starts: 2, SampleTime: at,
			Metrics: []model.JobMetric{{Name: "ticks", Kind: "counter", Value: 37}, {Name: "d", Kind: "gauge", Value: 0.5, Labels: map[string]string{"q": "rx"}},
				{Name: "u", Kind: "untyped", Value: 1}}},
		{Plugin: "tick", Name: "p1-ticks", Type: "ticker", Port: "p1", State: model.JobWaiting, Error: "plugin is restarting"},
		{Plugin: "tick", Name: "bad", Type: "x", State: model.JobError, Error: "refused"},
	}
	msgs := JobsToProto(in)
	if msgs[0].GetSampleTime() != "2026-12-03T20:41:07.412000001Z" || msgs[1].GetSampleTime() != "" ||
		msgs[0].GetState() != v1.JobState_JOB_STATE_RUNNING || msgs[0].GetMetrics()[0].GetKind() != v1.MetricKind_METRIC_KIND_COUNTER {
		t.Errorf("to proto: %v", msgs)
	}
	if out := JobsFromProto(msgs); !reflect.DeepEqual(out, in) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
	if out := JobsFromProto([]*v1.JobInfo{{State: 42, SampleTime: "yesterday"}}); out[0].State != "unknown" || !out[0].SampleTime.IsZero() {
		t.Errorf("unknown values: %+v", out[0])
	}
}
