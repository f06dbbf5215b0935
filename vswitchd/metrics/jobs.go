package metrics

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ovsplane/ovsplane/model"
)

// RegisterJobs exports the plugins' data-path jobs that jobs returns (vswitchd.Daemon.Jobs),
// read at every scrape:
//   - ovsplane_jobs_up{plugin,job,type,port}: 1 while the job runs, 0 otherwise
//   - ovsplane_jobs_sample_timestamp_seconds{plugin,job}: when the latest accepted sample was taken
//   - ovsplane_job_<metric>{plugin,job,<the metric's labels>}: each metric of each job's latest
//     sample; a counter's name gains _total. Within one family the first kind seen (jobs in
//     plugin, then name order) wins and metrics of another kind are left out, so a scrape
//     never fails on plugins that disagree.
//
// The samples were checked by the job manager (names, labels, finite values, counts).
func (m *Metrics) RegisterJobs(jobs func() []model.JobInfo) {
	m.reg.MustRegister(&jobCollector{jobs: jobs,
		up: prometheus.NewDesc("ovsplane_jobs_up", "1 while the plugin's data-path job runs in its current process, 0 otherwise.",
			[]string{"plugin", "job", "type", "port"}, nil),
		sampled: prometheus.NewDesc("ovsplane_jobs_sample_timestamp_seconds", "When the plugin took the job's latest accepted stats sample (Unix time).",
			[]string{"plugin", "job"}, nil)})
}

type jobCollector struct {
	jobs        func() []model.JobInfo
	up, sampled *prometheus.Desc
}

// Describe sends nothing: the job metrics' names are known at scrape time only (an unchecked
// collector).
func (c *jobCollector) Describe(chan<- *prometheus.Desc) {}

func (c *jobCollector) Collect(ch chan<- prometheus.Metric) {
	kinds := map[string]prometheus.ValueType{}
	seen := map[string]bool{}
	for _, j := range c.jobs() {
		up := 0.0
		if j.State == model.JobRunning {
			up = 1
		}
		// A refused job may carry a name that is no label value (not UTF-8): it is left out.
		if metric, err := prometheus.NewConstMetric(c.up, prometheus.GaugeValue, up, j.Plugin, j.Name, j.Type, j.Port); err == nil {
			ch <- metric
		}
		if metric, err := prometheus.NewConstMetric(c.sampled, prometheus.GaugeValue, float64(j.SampleTime.UnixNano())/1e9, j.Plugin, j.Name); err == nil && !j.SampleTime.IsZero() {
			ch <- metric
		}
		for _, x := range j.Metrics {
			name, vt := "ovsplane_job_"+x.Name, prometheus.UntypedValue
			switch x.Kind {
			case "gauge":
				vt = prometheus.GaugeValue
			case "counter":
				vt = prometheus.CounterValue
				if !strings.HasSuffix(name, "_total") {
					name += "_total"
				}
			}
			if k, ok := kinds[name]; ok && k != vt {
				continue
			}
			kinds[name] = vt
			names, values := []string{"plugin", "job"}, []string{j.Plugin, j.Name}
			key := name + "\x00" + j.Plugin + "\x00" + j.Name
			for _, k := range slices.Sorted(maps.Keys(x.Labels)) {
				names, values = append(names, k), append(values, x.Labels[k])
				key += "\x00" + k + "\x00" + x.Labels[k]
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			desc := prometheus.NewDesc(name, "A metric of plugins' data-path jobs (vsctl plugin stats PLUGIN).", names, nil)
			if metric, err := prometheus.NewConstMetric(desc, vt, x.Value, values...); err == nil {
				ch <- metric
			}
		}
	}
}
