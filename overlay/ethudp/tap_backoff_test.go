//go:build linux

package ethudp

import (
	"context"
	"testing"
	"time"
)

// TestReadBackoff checks the wait between failed tap reads: 10 ms doubling to 1 s, back to
// 10 ms after a good read, and no wait at all once the context has ended.
func TestReadBackoff(t *testing.T) {
	var b readBackoff
	want := []time.Duration{10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i, w := range want {
		if d := b.delay(); d != w*time.Millisecond {
			t.Fatalf("delay %d: %v, want %v", i, d, w*time.Millisecond)
		}
	}
	b.reset()
	if d := b.delay(); d != readBackoffFirst {
		t.Errorf("after reset: %v, want %v", d, readBackoffFirst)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if b.wait(ctx) {
		t.Error("wait returned true after the context ended")
	}
}
