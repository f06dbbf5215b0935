package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Pipeline is the state of the daemon's pipeline of port batches (vswitchd.Daemon.Pipeline)
// that RegisterPipeline exports.
type Pipeline struct {
	// Applying is the number of batches committed to OVSDB and not yet acknowledged by
	// ovs-vswitchd; Depth the bound on batches in flight; InFlightLimit the bound now (Depth,
	// or 1 where overlapping batches could outlast the apply timeout); SizeLimit the batch
	// size the measured apply time allows now.
	Applying, Depth, InFlightLimit, SizeLimit int
	// ApplyFixed and ApplyPerRequest are the fitted parts of a batch's apply time (fixed, and
	// per request) that SizeLimit is computed from; zero until fitted.
	ApplyFixed, ApplyPerRequest time.Duration
}

// RegisterPipeline exports the pipeline that pipeline returns, read at every scrape:
//   - ovsplane_batch_inflight: batches committed and waiting for ovs-vswitchd's acknowledgement
//   - ovsplane_batch_depth: the bound on batches in flight
//   - ovsplane_batch_inflight_limit: the bound on batches in flight now (depth, or 1)
//   - ovsplane_batch_size_limit: the batch size the measured apply time allows now
//   - ovsplane_batch_apply_fixed_seconds, ovsplane_batch_apply_per_request_seconds: the fitted
//     apply-time model the limit comes from
func (m *Metrics) RegisterPipeline(pipeline func() Pipeline) {
	gauge := func(name, help string, f func(Pipeline) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ovsplane", Name: name, Help: help},
			func() float64 { return float64(f(pipeline())) })
	}
	seconds := func(name, help string, f func(Pipeline) time.Duration) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ovsplane", Name: name, Help: help},
			func() float64 { return f(pipeline()).Seconds() })
	}
	m.reg.MustRegister(
		gauge("batch_inflight", "Port batches committed to OVSDB and not yet acknowledged by ovs-vswitchd (next_cfg above cur_cfg).",
			func(p Pipeline) int { return p.Applying }),
		gauge("batch_depth", "The bound on port batches in flight at once.", func(p Pipeline) int { return p.Depth }),
		gauge("batch_inflight_limit", "The bound on port batches in flight now: the depth, or 1 where overlapping batches could outlast the apply timeout.",
			func(p Pipeline) int { return p.InFlightLimit }),
		gauge("batch_size_limit", "The batch size the measured ovs-vswitchd apply time allows now.", func(p Pipeline) int { return p.SizeLimit }),
		seconds("batch_apply_fixed_seconds", "Fitted fixed part of ovs-vswitchd's time to apply a port batch (0 until fitted).",
			func(p Pipeline) time.Duration { return p.ApplyFixed }),
		seconds("batch_apply_per_request_seconds", "Fitted part per request of ovs-vswitchd's time to apply a port batch (0 until fitted).",
			func(p Pipeline) time.Duration { return p.ApplyPerRequest }))
}
