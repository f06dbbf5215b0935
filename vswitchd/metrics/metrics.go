// Package metrics exports ovsplaned's measurements in the Prometheus text format. A Metrics is
// both the daemon's vswitchd.Observer and the OVSDB client's ovsdb.Observer; Handler serves
// /metrics from its own registry (no global registry is used).
//
// Series (all prefixed ovsplane_):
//   - reconcile_duration_seconds{result}: reconcile passes
//   - ovsdb_transaction_duration_seconds{result}, ovsdb_transaction_operations: OVSDB
//     transactions on the wire (the daemon's batches and passes)
//   - batch_size, batch_commit_seconds{result}, batch_apply_seconds: batches of API port
//     requests: the time to commit them to OVSDB (planning included), then the time
//     ovs-vswitchd took to acknowledge them (its reconfiguration, not ovsplane's cost)
//   - batch_inflight, batch_depth, batch_size_limit: the pipeline of port batches — those
//     committed and waiting for ovs-vswitchd, the bound on them, and the batch size the
//     measured apply time allows (RegisterPipeline)
//   - objects{state}: managed objects (bridges, ports, interfaces) by state
//   - ovsdb_reconnects_total{connection}: attempts to reconnect the connection carrying
//     transactions ("transactions") and the replica's monitor connection ("monitor");
//     ovsdb_connected
//   - memory_releases_total: the memory a burst of work left behind handed back to the OS
//     once the daemon was idle (MemoryReleased; cmd/ovsplaned's burstRelease)
//   - reconcile_conflict{object,column}, reconcile_conflict_repairs_total{object,column}:
//     another OVSDB writer fighting over an owned column (NewConflicts)
//   - build_info{version,mode}
//   - jobs_up, jobs_sample_timestamp_seconds and job_<metric>: the plugins' data-path jobs
//     and their stats samples (RegisterJobs)
//
// plus the Go runtime and process collectors.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ovsplane/ovsplane/model"
)

// Metrics holds the collectors. Create it with New; its methods are safe for concurrent use.
type Metrics struct {
	reg        *prometheus.Registry
	reconcile  *prometheus.HistogramVec
	txn        *prometheus.HistogramVec
	txnOps     prometheus.Histogram
	batchSize  prometheus.Histogram
	batchDur   *prometheus.HistogramVec
	batchApply prometheus.Histogram
	objects    *prometheus.GaugeVec
	reconnects *prometheus.CounterVec
	releases   prometheus.Counter
}

// latencyBuckets cover 1 ms (one transaction on an idle server) to 60 s (ovs-vswitchd
// reconfiguring thousands of ports).
var latencyBuckets = prometheus.ExponentialBucketsRange(0.001, 60, 17)

// New returns Metrics registered in a new registry. connected is called at every scrape for
// ovsdb_connected (nil: the series is not exported); version and mode label build_info.
func New(version, mode string, connected func() bool) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reconcile = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ovsplane",
		Name: "reconcile_duration_seconds", Help: "Duration of reconcile passes (one OVSDB transaction each).",
		Buckets: latencyBuckets}, []string{"result"})
	m.txn = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ovsplane",
		Name: "ovsdb_transaction_duration_seconds", Help: "Duration of OVSDB transactions on the wire.",
		Buckets: latencyBuckets}, []string{"result"})
	m.txnOps = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ovsplane",
		Name: "ovsdb_transaction_operations", Help: "Operations per OVSDB transaction.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 9)})
	m.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ovsplane",
		Name: "batch_size", Help: "API port requests per batch (one OVSDB transaction and one ovs-vswitchd acknowledgement).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 11)})
	m.batchDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ovsplane",
		Name: "batch_commit_seconds", Help: "Time to commit a batch to OVSDB (planning included).",
		Buckets: latencyBuckets}, []string{"result"})
	m.batchApply = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ovsplane",
		Name: "batch_apply_seconds", Help: "Time ovs-vswitchd took to acknowledge a committed batch (next_cfg to cur_cfg).",
		Buckets: latencyBuckets})
	m.objects = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "ovsplane",
		Name: "objects", Help: "Managed objects (bridges, ports, interfaces) by state."}, []string{"state"})
	m.reconnects = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ovsplane",
		Name: "ovsdb_reconnects_total", Help: "Reconnection attempts to OVSDB after a lost connection, by connection: transactions (libovsdb's) or monitor (the replica's)."},
		[]string{"connection"})
	for _, c := range []string{"transactions", "monitor"} {
		m.reconnects.WithLabelValues(c) // exported at 0 before the first loss
	}
	m.releases = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ovsplane",
		Name: "memory_releases_total", Help: "Times the daemon, idle after a burst of work, handed its free heap memory back to the OS."})
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "ovsplane", Name: "build_info",
		Help: "Always 1; labels say the version and the mode.", ConstLabels: prometheus.Labels{"version": version, "mode": mode}})
	info.Set(1)
	m.reg.MustRegister(m.reconcile, m.txn, m.txnOps, m.batchSize, m.batchDur, m.batchApply, m.objects, m.reconnects, m.releases, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if connected != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ovsplane",
			Name: "ovsdb_connected", Help: "1 while connected to OVSDB."}, func() float64 {
			if connected() {
				return 1
			}
			return 0
		}))
	}
	for _, s := range []model.State{model.StatePending, model.StateReady, model.StateError} {
		m.objects.WithLabelValues(string(s)).Set(0)
	}
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry returns the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// BatchCommitted implements vswitchd.Observer.
func (m *Metrics) BatchCommitted(size int, committed, applied time.Duration, err error) {
	m.batchSize.Observe(float64(size))
	m.batchDur.WithLabelValues(result(err)).Observe(committed.Seconds())
	if applied > 0 {
		m.batchApply.Observe(applied.Seconds())
	}
}

// ReconcileDone implements vswitchd.Observer.
func (m *Metrics) ReconcileDone(d time.Duration, err error) {
	m.reconcile.WithLabelValues(result(err)).Observe(d.Seconds())
}

// Statuses implements vswitchd.Observer.
func (m *Metrics) Statuses(counts map[model.State]int) {
	for _, s := range []model.State{model.StatePending, model.StateReady, model.StateError} {
		m.objects.WithLabelValues(string(s)).Set(float64(counts[s]))
	}
}

// Transacted implements ovsdb.Observer.
func (m *Metrics) Transacted(d time.Duration, ops int, err error) {
	m.txn.WithLabelValues(result(err)).Observe(d.Seconds())
	m.txnOps.Observe(float64(ops))
}

// Reconnecting implements ovsdb.Observer.
func (m *Metrics) Reconnecting() { m.reconnects.WithLabelValues("transactions").Inc() }

// MonitorReconnecting implements ovsdb.Observer.
func (m *Metrics) MonitorReconnecting() { m.reconnects.WithLabelValues("monitor").Inc() }

// MemoryReleased counts one hand-back of free heap memory to the OS.
func (m *Metrics) MemoryReleased() { m.releases.Inc() }
