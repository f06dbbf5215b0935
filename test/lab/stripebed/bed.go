//go:build linux

package stripebed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// Bounds of a Spec.
const (
	// MaxLinks is the most links a bed may have.
	MaxLinks = 8
	// MinRateMbit and MaxRateMbit bound each link's rate.
	MinRateMbit, MaxRateMbit = 1, 10000
	// minBurst is the smallest tbf bucket: more than one 64 KiB segmentation-offload packet,
	// which tbf would otherwise drop or split.
	minBurst = 96 << 10
	// burstTime is how much of the link rate the bucket holds at least.
	burstTime = 20 * time.Millisecond
	// defaultQueue is the tbf queue (its latency parameter) when the Spec names none.
	defaultQueue = 50 * time.Millisecond
)

// DefaultRatesMbit are the link rates of the testbed.
var DefaultRatesMbit = [...]int{100, 200, 300, 400}

// Spec describes a bed. The zero value is the testbed: four links at 100, 200, 300 and
// 400 Mbit/s with a 50 ms tbf queue.
type Spec struct {
	// RatesMbit is each link's rate in Mbit/s, both directions; 1 to MaxLinks entries, each
	// within [MinRateMbit, MaxRateMbit]. Empty: DefaultRatesMbit.
	RatesMbit []int
	// Queue is the tbf queue length as time at link rate (tbf's latency); 0: 50 ms, at most 1 s.
	Queue time.Duration
	// BurstBytes overrides the tbf bucket of every link (0: ~20 ms at the link's rate, at least
	// 96 KiB); within [1600, 64 MiB]. For experiments with too small a bucket.
	BurstBytes int
}

// normalize fills the defaults and checks the bounds.
func (s Spec) normalize() (Spec, error) {
	if len(s.RatesMbit) == 0 {
		s.RatesMbit = DefaultRatesMbit[:]
	}
	if len(s.RatesMbit) > MaxLinks {
		return s, fmt.Errorf("stripebed spec: %d links, at most %d: name fewer rates", len(s.RatesMbit), MaxLinks)
	}
	for i, r := range s.RatesMbit {
		if r < MinRateMbit || r > MaxRateMbit {
			return s, fmt.Errorf("stripebed spec: link %d rate %d Mbit/s outside [%d, %d]", i, r, MinRateMbit, MaxRateMbit)
		}
	}
	if s.Queue == 0 {
		s.Queue = defaultQueue
	}
	if s.BurstBytes != 0 && (s.BurstBytes < 1600 || s.BurstBytes > 64<<20) {
		return s, fmt.Errorf("stripebed spec: burst %d bytes outside [1600, %d]", s.BurstBytes, 64<<20)
	}
	if s.Queue < time.Millisecond || s.Queue > time.Second {
		return s, fmt.Errorf("stripebed spec: queue %v outside [1ms, 1s]", s.Queue)
	}
	return s, nil
}

// Link is one shaped veth link between the two nodes.
type Link struct {
	// Index is the link's position, 0-based; its subnet is 10.77.<Index>.0/24.
	Index int
	// RateMbit is the tbf rate on both ends; BurstBytes the tbf bucket.
	RateMbit, BurstBytes int
	// A and B are the veth ends in the nodes A and B.
	A, B lab.VethEnd
	// AAddr and BAddr are the ends' addresses (prefix length 24).
	AAddr, BAddr netip.Addr
}

// Bed is two nodes (network namespaces) A and B joined by Links.
type Bed struct {
	// A and B are the nodes.
	A, B *lab.Netns
	// Links are the links, in Spec order.
	Links []Link
	// Queue is the tbf queue length in time.
	Queue time.Duration
}

// New builds a bed: two namespaces, one veth pair per rate, addresses 10.77.i.1 (A) and
// 10.77.i.2 (B), and a tbf root qdisc on both ends of each link. Reverse-path filtering is off
// in both nodes (MPTCP's subflows leave on one link for an address of another). Everything is
// removed at test cleanup. It fails the test on a bad spec or any error.
func New(t testing.TB, spec Spec) *Bed {
	t.Helper()
	spec, err := spec.normalize()
	if err != nil {
		t.Fatalf("%v", err)
	}
	lab.Require(t, lab.NeedNetns)
	b := &Bed{A: lab.NewNetns(t), B: lab.NewNetns(t), Queue: spec.Queue}
	for _, ns := range []*lab.Netns{b.A, b.B} {
		for _, key := range []string{"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"} {
			if err := SetSysctl(ns, key, "0"); err != nil {
				t.Fatalf("stripebed: %v", err)
			}
		}
	}
	for i, rate := range spec.RatesMbit {
		l := Link{
			Index:      i,
			RateMbit:   rate,
			BurstBytes: burstBytes(rate),
			AAddr:      netip.AddrFrom4([4]byte{10, 77, byte(i), 1}),
			BAddr:      netip.AddrFrom4([4]byte{10, 77, byte(i), 2}),
		}
		if spec.BurstBytes != 0 {
			l.BurstBytes = spec.BurstBytes
		}
		p := lab.NewVethPair(t, lab.VethSpec{ANetns: b.A, BNetns: b.B,
			AAddr: l.AAddr.String() + "/24", BAddr: l.BAddr.String() + "/24"})
		l.A, l.B = p.A, p.B
		for _, end := range []lab.VethEnd{l.A, l.B} {
			end.Netns.Run(t, "tc", "qdisc", "replace", "dev", end.Name, "root", "tbf",
				"rate", strconv.Itoa(rate)+"mbit", "burst", strconv.Itoa(l.BurstBytes),
				"latency", strconv.FormatInt(spec.Queue.Microseconds(), 10)+"us")
		}
		b.Links = append(b.Links, l)
	}
	return b
}

// burstBytes is the tbf bucket for a rate: ~20 ms at rate, at least minBurst.
func burstBytes(rateMbit int) int {
	return max(minBurst, int(int64(rateMbit)*1e6/8*int64(burstTime)/int64(time.Second)))
}

// Shaping is what tc reports of one end's root qdisc.
type Shaping struct {
	// Kind is the root qdisc's kind ("tbf" when shaped); "" when tc shows no root qdisc.
	Kind string
	// RateBitsPerSec is tbf's rate; 0 for another kind.
	RateBitsPerSec int64
}

// Shaping reads the root qdisc of a link end (`tc -j qdisc show dev …` in its namespace).
func (b *Bed) Shaping(ctx context.Context, end lab.VethEnd) (Shaping, error) {
	out, err := end.Netns.Exec(ctx, "tc", "-j", "qdisc", "show", "dev", end.Name, "root")
	if err != nil {
		return Shaping{}, fmt.Errorf("read qdisc of %s: %w", end.Name, err)
	}
	if len(out) > 1<<20 {
		return Shaping{}, fmt.Errorf("read qdisc of %s: %d bytes of tc output, more than 1 MiB", end.Name, len(out))
	}
	var qs []struct {
		Kind    string `json:"kind"`
		Root    bool   `json:"root"`
		Options struct {
			Rate int64 `json:"rate"`
		} `json:"options"`
	}
	if err := json.Unmarshal([]byte(out), &qs); err != nil {
		return Shaping{}, fmt.Errorf("read qdisc of %s: tc output: %w", end.Name, err)
	}
	for _, q := range qs {
		if q.Root || len(qs) == 1 {
			s := Shaping{Kind: q.Kind}
			if q.Kind == "tbf" {
				s.RateBitsPerSec = q.Options.Rate * 8 // tc's JSON gives tbf's rate in bytes/s
			}
			return s, nil
		}
	}
	return Shaping{}, nil
}

// CheckShaping verifies that both ends of every link have a tbf root qdisc at the link's rate.
func (b *Bed) CheckShaping(ctx context.Context) error {
	var errs []error
	for _, l := range b.Links {
		for _, end := range []lab.VethEnd{l.A, l.B} {
			s, err := b.Shaping(ctx, end)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if want := int64(l.RateMbit) * 1e6; s.Kind != "tbf" || s.RateBitsPerSec != want {
				errs = append(errs, fmt.Errorf("link %d end %s in %s: root qdisc %q at %d bit/s, want tbf at %d bit/s",
					l.Index, end.Name, end.Netns, s.Kind, s.RateBitsPerSec, want))
			}
		}
	}
	return errors.Join(errs...)
}
