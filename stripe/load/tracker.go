package load

import (
	"fmt"
	"math"
	"time"
)

// TrackerConfig configures a Tracker.
type TrackerConfig struct {
	// Clock gives the time of each Observe. Required.
	Clock Clock
	// Vmax is each port's capacity per direction in bytes per second (a 1 Gbit/s NIC: 125e6);
	// 1..MaxPorts ports, each finite and > 0.
	Vmax []float64
	// Smoothing is the EWMA factor r, 0 < r ≤ 1; 0 means DefaultSmoothing.
	Smoothing float64
}

// PortLoad is one port's state after the latest Observe.
type PortLoad struct {
	// Rates are the raw rates of the last period (zero until two samples were observed).
	Rates Rates
	// TxLoad and RxLoad are the smoothed load rates L*: byte rate / Vmax, EWMA-smoothed.
	TxLoad, RxLoad float64
	// TxAvailable and RxAvailable are Vmax − V(t) in bytes per second from the last period's raw
	// byte rates, never below zero.
	TxAvailable, RxAvailable float64
	// Resets counts the periods skipped because a counter went backwards.
	Resets uint64
}

type portState struct {
	vmax   float64
	prev   Counters
	tx, rx EWMA
	load   PortLoad
}

// Tracker keeps, per port, the previous counters and the smoothed load rates, fed by Observe
// every sampling period T. It is not safe for concurrent use.
type Tracker struct {
	clock Clock
	ports []portState
	last  time.Time
	ready bool
}

// NewTracker validates cfg and returns a Tracker with no samples.
func NewTracker(cfg TrackerConfig) (*Tracker, error) {
	if cfg.Clock == nil {
		return nil, fmt.Errorf("load: tracker without a Clock: set TrackerConfig.Clock")
	}
	if len(cfg.Vmax) < 1 || len(cfg.Vmax) > MaxPorts {
		return nil, fmt.Errorf("load: tracker with %d ports: want 1 to %d", len(cfg.Vmax), MaxPorts)
	}
	r := cfg.Smoothing
	if r == 0 {
		r = DefaultSmoothing
	}
	e, err := NewEWMA(r)
	if err != nil {
		return nil, err
	}
	t := &Tracker{clock: cfg.Clock, ports: make([]portState, len(cfg.Vmax))}
	for i, v := range cfg.Vmax {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("load: port %d Vmax %v bytes/s: want a finite capacity > 0", i, v)
		}
		t.ports[i] = portState{vmax: v, tx: e, rx: e, load: PortLoad{TxAvailable: v, RxAvailable: v}}
	}
	return t, nil
}

// Observe takes one read of every port's counters (in port order) at the clock's current time.
// The first call only records the baseline. Later calls compute each port's rates since the
// previous call and update its smoothed loads; a port whose counters went backwards is
// re-baselined and its period skipped (PortLoad.Resets). Observe fails, changing nothing, when
// the number of ports differs from the configuration or the clock did not advance.
func (t *Tracker) Observe(counters []Counters) error {
	if len(counters) != len(t.ports) {
		return fmt.Errorf("load: %d port counters observed, tracker has %d ports", len(counters), len(t.ports))
	}
	now := t.clock.Now()
	if !t.ready {
		for i := range t.ports {
			t.ports[i].prev = counters[i]
		}
		t.last, t.ready = now, true
		return nil
	}
	elapsed := now.Sub(t.last)
	if elapsed <= 0 {
		return fmt.Errorf("load: clock at %v, previous sample at %v: the sampling period must be > 0", now, t.last)
	}
	for i := range t.ports {
		p := &t.ports[i]
		r, err := RatesBetween(p.prev, counters[i], elapsed)
		p.prev = counters[i]
		if err != nil {
			p.load.Resets++
			continue
		}
		tx, rx := r.TxBytes/p.vmax, r.RxBytes/p.vmax
		p.load.Rates = r
		p.load.TxLoad, p.load.RxLoad = p.tx.Update(tx), p.rx.Update(rx)
		p.load.TxAvailable, p.load.RxAvailable = max(0, p.vmax-r.TxBytes), max(0, p.vmax-r.RxBytes)
	}
	t.last = now
	return nil
}

// Ports returns a copy of every port's state, in port order.
func (t *Tracker) Ports() []PortLoad {
	out := make([]PortLoad, len(t.ports))
	for i, p := range t.ports {
		out[i] = p.load
	}
	return out
}

// TxLoads returns the smoothed send load rates, in port order: the input of BalanceDegree and
// Adjust for the send-port choice.
func (t *Tracker) TxLoads() []float64 {
	out := make([]float64, len(t.ports))
	for i, p := range t.ports {
		out[i] = p.load.TxLoad
	}
	return out
}

// RxLoads returns the smoothed receive load rates, in port order.
func (t *Tracker) RxLoads() []float64 {
	out := make([]float64, len(t.ports))
	for i, p := range t.ports {
		out[i] = p.load.RxLoad
	}
	return out
}
