// Package load turns NIC port counters into the seed's load model: rates over a sampling period
// T, load rate = rate / Vmax, EWMA smoothing, the balance degree of a port against the others,
// and the "adjust" decision that moves a send choice off an overloaded port.
//
// # Model
//
//   - Rates: the six counters the seed samples (Counters: rx/tx packets and bytes, rx missed, rx
//     errors) are read every period T; a rate is the counter's increase divided by the time
//     between the two reads (RatesBetween).
//   - Load rate: L(t) = V(t) / Vmax, per direction, with Vmax the port's capacity in the same unit
//     (Utilisation). Available bandwidth is Vmax − V(t), never below zero.
//   - Smoothing: L*(t) = r·L(t) + (1−r)·L*(t−1), r = DefaultSmoothing (0.8); the first sample seeds
//     L* (EWMA). The seed's text writes L(t−1) in the second term; the reference and this package
//     use the recursive form, whose test vector 0.2, 0.9, 0.9, 0.1 → 0.2, 0.76, 0.872, 0.2544 the
//     tests check.
//   - Balance degree: the seed defines it in prose only ("how much higher a port's load rate is
//     than the other ports'"; its equations 19 and 20 are images missing from the text). This
//     package defines it as the port's smoothed load minus the mean smoothed load of the other
//     ports: B_i = L*_i − (Σ_{j≠i} L*_j)/(N−1), and 0 when N = 1. It is in load-rate units, so a
//     threshold δ = 0.1 means "ten points of Vmax above the others' average".
//   - Adjust: when B_i of the chosen send port exceeds δ, choose the least-loaded port instead
//     (lowest index among equals) (Adjust).
//
// Everything here is a pure function except Tracker, which keeps the previous counters and the
// EWMA state per port and reads time from an injected Clock. Nothing is safe for concurrent use
// unless stated.
package load

import (
	"fmt"
	"math"
	"time"
)

// DefaultSmoothing is the seed's EWMA factor r.
const DefaultSmoothing = 0.8

// MaxPorts bounds the number of ports of every function and Tracker here.
const MaxPorts = 256

// Clock is the time source of a Tracker; tests pass a controllable one.
type Clock interface {
	Now() time.Time
}

// Smooth returns r·sample + (1−r)·prev, one EWMA step.
func Smooth(prev, sample, r float64) float64 { return r*sample + (1-r)*prev }

// EWMA is an exponentially weighted moving average whose first sample seeds it. The zero value is
// not usable; build one with NewEWMA.
type EWMA struct {
	r      float64
	value  float64
	seeded bool
}

// NewEWMA returns an empty average with factor r, 0 < r ≤ 1 (1 means no smoothing).
func NewEWMA(r float64) (EWMA, error) {
	if !(r > 0 && r <= 1) {
		return EWMA{}, fmt.Errorf("load: smoothing factor %v: want 0 < r ≤ 1 (the seed uses %v)", r, DefaultSmoothing)
	}
	return EWMA{r: r}, nil
}

// Update adds a sample and returns the new average: the sample itself the first time, then
// Smooth(previous, sample, r).
func (e *EWMA) Update(sample float64) float64 {
	if !e.seeded {
		e.value, e.seeded = sample, true
	} else {
		e.value = Smooth(e.value, sample, e.r)
	}
	return e.value
}

// Value returns the current average and whether any sample was added.
func (e *EWMA) Value() (float64, bool) { return e.value, e.seeded }

// Utilisation returns rate / vmax, the seed's load rate. rate must be finite and ≥ 0, vmax finite
// and > 0, in the same unit. The result is not clamped: above 1 means the port carried more than
// its configured Vmax (a Vmax set too low, or counter timing jitter).
func Utilisation(rate, vmax float64) (float64, error) {
	if !(vmax > 0) || math.IsInf(vmax, 0) {
		return 0, fmt.Errorf("load: Vmax %v: want a finite capacity > 0", vmax)
	}
	if !(rate >= 0) || math.IsInf(rate, 0) {
		return 0, fmt.Errorf("load: rate %v: want a finite rate ≥ 0", rate)
	}
	return rate / vmax, nil
}

// Counters are the cumulative port statistics the seed samples (DPDK rte_eth_stats ipackets,
// opackets, ibytes, obytes, imissed, ierrors; OVS rx_packets, tx_packets, rx_bytes, tx_bytes,
// rx_missed_errors, rx_errors).
type Counters struct {
	RxPackets, TxPackets uint64
	RxBytes, TxBytes     uint64
	RxMissed, RxErrors   uint64
}

// Rates are Counters' increases per second over one sampling period.
type Rates struct {
	RxPackets, TxPackets float64
	RxBytes, TxBytes     float64
	RxMissed, RxErrors   float64
}

// RatesBetween returns the per-second rates between two reads of one port's counters taken
// elapsed apart. It fails when elapsed ≤ 0 or a counter went backwards (the port was reset or
// its statistics cleared; start again from cur).
func RatesBetween(prev, cur Counters, elapsed time.Duration) (Rates, error) {
	if elapsed <= 0 {
		return Rates{}, fmt.Errorf("load: sampling period %v: want > 0 (did the clock stand still?)", elapsed)
	}
	sec := elapsed.Seconds()
	var r Rates
	for _, c := range []struct {
		name      string
		prev, cur uint64
		out       *float64
	}{
		{"rx packets", prev.RxPackets, cur.RxPackets, &r.RxPackets},
		{"tx packets", prev.TxPackets, cur.TxPackets, &r.TxPackets},
		{"rx bytes", prev.RxBytes, cur.RxBytes, &r.RxBytes},
		{"tx bytes", prev.TxBytes, cur.TxBytes, &r.TxBytes},
		{"rx missed", prev.RxMissed, cur.RxMissed, &r.RxMissed},
		{"rx errors", prev.RxErrors, cur.RxErrors, &r.RxErrors},
	} {
		if c.cur < c.prev {
			return Rates{}, fmt.Errorf("load: %s counter went from %d to %d: the port was reset; start again from the new value", c.name, c.prev, c.cur)
		}
		*c.out = float64(c.cur-c.prev) / sec
	}
	return r, nil
}

// checkLoads validates a load vector: 1..MaxPorts finite values ≥ 0.
func checkLoads(loads []float64) error {
	if len(loads) < 1 || len(loads) > MaxPorts {
		return fmt.Errorf("load: %d ports: want 1 to %d", len(loads), MaxPorts)
	}
	for i, l := range loads {
		if !(l >= 0) || math.IsInf(l, 0) {
			return fmt.Errorf("load: port %d load %v: want a finite value ≥ 0", i, l)
		}
	}
	return nil
}

// BalanceDegree returns port i's balance degree: loads[i] minus the mean of the other ports'
// loads (0 with one port). loads are smoothed load rates, one per port.
func BalanceDegree(loads []float64, i int) (float64, error) {
	if err := checkLoads(loads); err != nil {
		return 0, err
	}
	if i < 0 || i >= len(loads) {
		return 0, fmt.Errorf("load: port %d: want 0 to %d", i, len(loads)-1)
	}
	if len(loads) == 1 {
		return 0, nil
	}
	var others float64
	for j, l := range loads {
		if j != i {
			others += l
		}
	}
	return loads[i] - others/float64(len(loads)-1), nil
}

// LeastLoaded returns the port with the lowest load, the lowest index among equals.
func LeastLoaded(loads []float64) (int, error) {
	if err := checkLoads(loads); err != nil {
		return 0, err
	}
	best := 0
	for j, l := range loads {
		if l < loads[best] {
			best = j
		}
	}
	return best, nil
}

// Adjust is the seed's adjust decision for a send port: when chosen's balance degree exceeds
// delta (δ ≥ 0), it returns the least-loaded port and true; otherwise chosen and false.
func Adjust(loads []float64, chosen int, delta float64) (int, bool, error) {
	if !(delta >= 0) || math.IsInf(delta, 0) {
		return chosen, false, fmt.Errorf("load: threshold δ %v: want a finite value ≥ 0", delta)
	}
	b, err := BalanceDegree(loads, chosen)
	if err != nil {
		return chosen, false, err
	}
	if b <= delta {
		return chosen, false, nil
	}
	least, err := LeastLoaded(loads)
	if err != nil {
		return chosen, false, err
	}
	return least, least != chosen, nil
}
