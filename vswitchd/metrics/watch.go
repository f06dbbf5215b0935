package metrics

import "github.com/prometheus/client_golang/prometheus"

// WatcherQueue is one watcher plugin's delivery queue, as the daemon's dispatcher counts it
// (vswitchd/watch.Stats); cmd/ovsplaned converts.
type WatcherQueue struct {
	Plugin string
	// Pending interfaces wait for delivery; MaxPending is the bound past which the queue
	// collapses into a fresh snapshot.
	Pending, MaxPending int
	// Counters since the daemon started.
	Batches, Events, Failures, Resyncs, Overflows, Dropped, Coalesced, Changes, Ignored uint64
	// Statuses counts the plugin's interface statuses by level ("info", "warning", "error");
	// StatusesRefused counts the statuses refused since the daemon started.
	Statuses        map[string]int
	StatusesRefused uint64
}

// RegisterWatchers exports the watcher plugins' queues that queues returns, read at every
// scrape, so an operator sees a slow watcher (pending near its bound, overflows growing):
//   - ovsplane_watch_pending{plugin}, ovsplane_watch_pending_max{plugin} (gauges)
//   - ovsplane_watch_{batches,events,failures,resyncs,overflows,dropped,coalesced,changes,
//     ignored,statuses_refused}_total{plugin} (counters)
//   - ovsplane_plugin_interface_status{plugin,level} (gauge): how many interfaces have a
//     status of that level from that plugin, for info, warning and error
func (m *Metrics) RegisterWatchers(queues func() []WatcherQueue) {
	c := &watchCollector{queues: queues, descs: map[string]*prometheus.Desc{}}
	for _, n := range []struct{ name, help string }{
		{"pending", "Interfaces whose state waits for delivery to the watcher plugin."},
		{"pending_max", "The bound on pending interfaces; past it the queue becomes a fresh snapshot."},
		{"batches_total", "Event batches the watcher plugin accepted."},
		{"events_total", "Interface events the watcher plugin accepted."},
		{"failures_total", "Batches the watcher plugin failed (delivered again later)."},
		{"resyncs_total", "Snapshots completed (plugin start, restart, overflow)."},
		{"overflows_total", "Times the pending bound was passed (the queue then resyncs)."},
		{"dropped_total", "Pending states dropped by overflows (covered by the resync)."},
		{"coalesced_total", "States replaced by a newer one before delivery."},
		{"changes_total", "other_config changes of the watcher plugin written to OVSDB."},
		{"ignored_total", "other_config keys of the watcher plugin refused (foreign keys, interfaces not in the batch)."},
		{"statuses_refused_total", "Interface statuses of the watcher plugin refused (interfaces not in the batch, past the bound of statuses per plugin)."},
	} {
		c.descs[n.name] = prometheus.NewDesc("ovsplane_watch_"+n.name, n.help, []string{"plugin"}, nil)
		c.order = append(c.order, n.name)
	}
	c.status = prometheus.NewDesc("ovsplane_plugin_interface_status",
		"Interfaces with a status of this level from this watcher plugin (kept in memory, shown by vsctl status).",
		[]string{"plugin", "level"}, nil)
	m.reg.MustRegister(c)
}

type watchCollector struct {
	queues func() []WatcherQueue
	descs  map[string]*prometheus.Desc
	order  []string
	status *prometheus.Desc
}

func (c *watchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, n := range c.order {
		ch <- c.descs[n]
	}
	ch <- c.status
}

func (c *watchCollector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.queues() {
		values := map[string]float64{
			"pending": float64(q.Pending), "pending_max": float64(q.MaxPending),
			"batches_total": float64(q.Batches), "events_total": float64(q.Events),
			"failures_total": float64(q.Failures), "resyncs_total": float64(q.Resyncs),
			"overflows_total": float64(q.Overflows), "dropped_total": float64(q.Dropped),
			"coalesced_total": float64(q.Coalesced), "changes_total": float64(q.Changes),
			"ignored_total": float64(q.Ignored), "statuses_refused_total": float64(q.StatusesRefused),
		}
		for _, n := range c.order {
			vt := prometheus.CounterValue
			if n == "pending" || n == "pending_max" {
				vt = prometheus.GaugeValue
			}
			// A plugin name is a label value (checked at configuration); skip one that is not.
			if metric, err := prometheus.NewConstMetric(c.descs[n], vt, values[n], q.Plugin); err == nil {
				ch <- metric
			}
		}
		// Every level has a series, 0 when the plugin has no status of that level.
		for _, l := range []string{"info", "warning", "error"} {
			if metric, err := prometheus.NewConstMetric(c.status, prometheus.GaugeValue, float64(q.Statuses[l]), q.Plugin, l); err == nil {
				ch <- metric
			}
		}
	}
}
