//go:build linux

package stripebed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Drops are where a stripe arm lost packets during a measurement, as counter changes.
type Drops struct {
	// TunTx is the sending tun device's transmit drops (its queue was full: the tunnel's
	// reader fell behind).
	TunTx int64
	// Qdisc is the packets the sending node's link qdiscs (tbf) dropped, summed over the links.
	Qdisc int64
	// RxKernel is the frames the receiving node's link sockets dropped (socket buffer or ring
	// full: its receivers fell behind), summed over the links.
	RxKernel uint64
	// Resent is the sending engine's retransmitted frames (FastResent of them marked by
	// repeated acks); Lost the receiving engine's frames given up after the loss timeout.
	Resent, FastResent, Lost uint64
}

// dropCounters reads the counters behind Drops on node A of s (the sending side).
func (b *Bed) dropCounters(ctx context.Context, s *Stripe) (Drops, error) {
	data, err := readProc(b.A, "dev")
	if err != nil {
		return Drops{}, err
	}
	var d Drops
	if d.TunTx, err = txDropped(data, stripeTun); err != nil {
		return Drops{}, err
	}
	for _, l := range b.Links {
		out, err := b.A.Exec(ctx, "tc", "-s", "qdisc", "show", "dev", l.A.Name)
		if err != nil {
			return Drops{}, fmt.Errorf("qdisc counters of %s: %w", l.A.Name, err)
		}
		d.Qdisc += sumDropped(out)
	}
	sa, sb := s.A.Engine.Stats(), s.B.Engine.Stats()
	d.Resent, d.FastResent, d.Lost = sa.Retransmits, sa.FastRetransmits, sb.Lost
	for _, l := range sb.Links {
		d.RxKernel += l.KernelDrops
	}
	return d, nil
}

// Sub returns the change from before to d.
func (d Drops) Sub(before Drops) Drops {
	return Drops{TunTx: d.TunTx - before.TunTx, Qdisc: d.Qdisc - before.Qdisc, RxKernel: d.RxKernel - before.RxKernel,
		Resent: d.Resent - before.Resent, FastResent: d.FastResent - before.FastResent, Lost: d.Lost - before.Lost}
}

// txDropped returns interface name's transmit drops from /proc/net/dev.
func txDropped(data []byte, name string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		n, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(n) != name {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			break
		}
		v, err := strconv.ParseInt(f[11], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/net/dev: interface %s: bad transmit drop counter %q", name, f[11])
		}
		return v, nil
	}
	return 0, fmt.Errorf("/proc/net/dev: no interface %s", name)
}

// sumDropped sums the "dropped N" counters of tc -s qdisc output.
func sumDropped(out string) int64 {
	var sum int64
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if strings.TrimPrefix(f[i], "(") == "dropped" {
			v, err := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}
