package metrics

import "github.com/prometheus/client_golang/prometheus"

// Conflicts exports the reconciler's conflicts with other OVSDB writers
// (vswitchd/reconcile.Conflict): ovsplane_reconcile_conflict_repairs_total counts the repairs
// of a column in conflict, ovsplane_reconcile_conflict is 1 while the conflict lasts and 0 after
// it ended, both labelled with the object ("bridge/NAME") and the column. The label values are
// bounded by the configured objects and their few repaired columns.
type Conflicts struct {
	repairs *prometheus.CounterVec
	active  *prometheus.GaugeVec
}

// NewConflicts registers the conflict series in m's registry. Call it once per Metrics.
func NewConflicts(m *Metrics) *Conflicts {
	c := &Conflicts{
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ovsplane", Name: "reconcile_conflict_repairs_total",
			Help: "Repairs of an owned column that another OVSDB writer keeps changing (a conflict), by object and column."},
			[]string{"object", "column"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "ovsplane", Name: "reconcile_conflict",
			Help: "1 while another OVSDB writer fights ovsplaned over an owned column of the object, 0 after it stopped."},
			[]string{"object", "column"}),
	}
	m.reg.MustRegister(c.repairs, c.active)
	return c
}

// Observe records one report of a conflict over object's column: a repair while active, its end
// otherwise (reconcile.Options.OnConflict).
func (c *Conflicts) Observe(object, column string, active bool) {
	if active {
		c.repairs.WithLabelValues(object, column).Inc()
		c.active.WithLabelValues(object, column).Set(1)
		return
	}
	c.active.WithLabelValues(object, column).Set(0)
}
