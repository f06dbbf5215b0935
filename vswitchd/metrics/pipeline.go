package metrics

import "github.com/prometheus/client_golang/prometheus"

// Pipeline is the state of the daemon's pipeline of port batches (vswitchd.Daemon.Pipeline)
// that RegisterPipeline exports.
type Pipeline struct {
	// Applying is the number of batches committed to OVSDB and not yet acknowledged by
	// ovs-vswitchd; Depth the bound on batches in flight; SizeLimit the batch size the
	// measured apply time allows now.
	Applying, Depth, SizeLimit int
}

// RegisterPipeline exports the pipeline that pipeline returns, read at every scrape:
//   - ovsplane_batch_inflight: batches committed and waiting for ovs-vswitchd's acknowledgement
//   - ovsplane_batch_depth: the bound on batches in flight
//   - ovsplane_batch_size_limit: the batch size the measured apply time allows now
func (m *Metrics) RegisterPipeline(pipeline func() Pipeline) {
	gauge := func(name, help string, f func(Pipeline) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ovsplane", Name: name, Help: help},
			func() float64 { return float64(f(pipeline())) })
	}
	m.reg.MustRegister(
		gauge("batch_inflight", "Port batches committed to OVSDB and not yet acknowledged by ovs-vswitchd (next_cfg above cur_cfg).",
			func(p Pipeline) int { return p.Applying }),
		gauge("batch_depth", "The bound on port batches in flight at once.", func(p Pipeline) int { return p.Depth }),
		gauge("batch_size_limit", "The batch size the measured ovs-vswitchd apply time allows now.", func(p Pipeline) int { return p.SizeLimit }))
}
