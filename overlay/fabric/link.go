package fabric

import (
	"context"
	"fmt"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// Bounds of a link measurement (the schema's).
const (
	// MaxBandwidthKbps is 1 Tbit/s.
	MaxBandwidthKbps = 1_000_000_000
	// MaxLatencyUs is 60 s.
	MaxLatencyUs = 60_000_000
	// MaxLossPPM is 100 % loss.
	MaxLossPPM = 1_000_000
)

// LinkReport is one measurement of the underlay link between two registered nodes. A link is
// undirected: A and B are stored in name order.
type LinkReport struct {
	// A and B name the two nodes; they must differ and be registered.
	A, B string
	// BandwidthKbps is the measured bandwidth, 0 to MaxBandwidthKbps.
	BandwidthKbps int64
	// LatencyUs is the measured one-way latency, 0 to MaxLatencyUs.
	LatencyUs int64
	// LossPPM is the measured loss in parts per million, 0 to MaxLossPPM.
	LossPPM int64
	// MeasuredAt is when it was measured; the zero time means now.
	MeasuredAt time.Time
}

// Validate checks names and bounds; errors wrap ErrInvalid and name the link.
func (l LinkReport) Validate() error {
	if err := checkName("link end", l.A); err != nil {
		return err
	}
	if err := checkName("link end", l.B); err != nil {
		return err
	}
	if l.A == l.B {
		return fmt.Errorf("%w: link %s–%s: the ends must differ", ErrInvalid, l.A, l.B)
	}
	if l.BandwidthKbps < 0 || l.BandwidthKbps > MaxBandwidthKbps || l.LatencyUs < 0 || l.LatencyUs > MaxLatencyUs ||
		l.LossPPM < 0 || l.LossPPM > MaxLossPPM {
		return fmt.Errorf("%w: link %s–%s: bandwidth %d kbps, latency %d µs, loss %d ppm: keep within 0–%d, 0–%d, 0–%d",
			ErrInvalid, l.A, l.B, l.BandwidthKbps, l.LatencyUs, l.LossPPM, MaxBandwidthKbps, MaxLatencyUs, MaxLossPPM)
	}
	return nil
}

// ReportLink stores the latest measurement of a link, replacing the previous one. Both ends
// must be registered nodes (ErrUnknownNode otherwise).
func (c *Client) ReportLink(ctx context.Context, l LinkReport) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if l.A > l.B {
		l.A, l.B = l.B, l.A
	}
	if l.MeasuredAt.IsZero() {
		l.MeasuredAt = c.now()
	}
	row := ovsdb.Row{"bandwidth_kbps": l.BandwidthKbps, "latency_us": l.LatencyUs, "loss_ppm": l.LossPPM,
		"measured_at_ms": msOf(l.MeasuredAt)}
	what := "report link " + l.A + "–" + l.B
	return c.retry(ctx, what, func(ctx context.Context, _ bool) (bool, error) {
		for _, n := range []string{l.A, l.B} {
			rows, err := c.selectRows(ctx, tableNode, []ovsdb.Condition{eq("name", n)}, "name")
			if err != nil {
				return false, err
			}
			if len(rows) == 0 {
				return false, fmt.Errorf("%w: %s: node %s: register it first", ErrUnknownNode, what, n)
			}
		}
		res, err := c.transact(ctx, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableLink,
			Where: []ovsdb.Condition{eq("a", l.A), eq("b", l.B)}, Row: row})
		if err != nil {
			return false, err
		}
		if res[0].Count == 1 {
			return true, nil
		}
		ins := ovsdb.Row{"a": l.A, "b": l.B}
		for k, v := range row {
			ins[k] = v
		}
		_, err = c.transact(ctx, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: tableLink, Row: ins})
		return err == nil, err
	})
}

// Links returns every stored link measurement.
func (c *Client) Links(ctx context.Context) ([]LinkReport, error) {
	rows, err := c.selectRows(ctx, tableLink, []ovsdb.Condition{ovsdb.NewCondition("loss_ppm", ovsdb.ConditionGreaterThanOrEqual, 0)},
		"a", "b", "bandwidth_kbps", "latency_us", "loss_ppm", "measured_at_ms")
	if err != nil {
		return nil, err
	}
	out := make([]LinkReport, 0, len(rows))
	for _, r := range rows {
		var l LinkReport
		var ms int64
		for _, f := range []struct {
			col string
			s   *string
			i   *int64
		}{{"a", &l.A, nil}, {"b", &l.B, nil}, {"bandwidth_kbps", nil, &l.BandwidthKbps}, {"latency_us", nil, &l.LatencyUs},
			{"loss_ppm", nil, &l.LossPPM}, {"measured_at_ms", nil, &ms}} {
			if f.s != nil {
				*f.s, err = rowString(r, f.col)
			} else {
				*f.i, err = rowInt(r, f.col)
			}
			if err != nil {
				return nil, err
			}
		}
		l.MeasuredAt = time.UnixMilli(ms)
		out = append(out, l)
	}
	return out, nil
}
