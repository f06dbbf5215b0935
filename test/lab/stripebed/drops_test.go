//go:build linux

package stripebed

import (
	"testing"
	"time"
)

// TestDropCounterParsers: the tc and /proc/net/dev parsers read the right columns, and the
// benchmark variants parse in any order and refuse unknown or out-of-range options.
func TestDropCounterParsers(t *testing.T) {
	tc := "qdisc tbf 1: root refcnt 2 rate 100Mbit burst 262144b lat 50ms\n Sent 1000 bytes 10 pkt (dropped 7, overlimits 3 requeues 0)\n backlog 0b 0p requeues 0\n" +
		"qdisc noqueue 0: dev x (dropped 2, overlimits 0)"
	if got := sumDropped(tc); got != 9 {
		t.Errorf("sumDropped = %d, want 9", got)
	}
	dev := "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
		"    lo: 10 1 0 0 0 0 0 0 10 1 0 0 0 0 0 0\n" +
		"stripe0: 500 5 0 4 0 0 0 0 900 9 1 1234 0 0 0 0\n"
	if got, err := txDropped([]byte(dev), "stripe0"); err != nil || got != 1234 {
		t.Errorf("txDropped = %d, %v; want 1234", got, err)
	}
	if _, err := txDropped([]byte(dev), "eth9"); err == nil {
		t.Error("txDropped found an interface that is not there")
	}
	o, err := parseVariant("weighted+txq100+rto40+ringms200+nooffload")
	if err != nil || o.Policy != "weighted" || o.TunQueueLen != 100 || o.RetransmitTimeout != 40*time.Millisecond ||
		!o.RxRing || o.RingMs != 200 || !o.NoOffload || o.Pace {
		t.Errorf("parseVariant = %+v, %v", o, err)
	}
	for _, bad := range []string{"weighted+fast", "weighted+txq0", "weighted+rtoX", "weighted+ringms0"} {
		if _, err := parseVariant(bad); err == nil {
			t.Errorf("parseVariant(%q) accepted", bad)
		}
	}
	if got := (StripeOptions{RingMs: 200}).ringBlocks(50e6); got != 42 {
		t.Errorf("ring for 200 ms at 400 Mbit/s: %d blocks, want 42", got)
	}
	if got := (StripeOptions{}).ringBlocks(50e6); got != 0 {
		t.Errorf("ring without RingMs: %d blocks, want 0 (the link's default)", got)
	}
}
