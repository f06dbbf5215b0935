package vswitchd_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/vswitchd"
)

// Health.Degraded names what does not work now: ovs-vswitchd known not to run (the probe), and
// the caller's own parts (Options.Degraded, ovsplaned's sandbox); empty again once all is back.
func TestHealthDegraded(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	alive := true
	var extra []string
	probe := func(context.Context) (bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		return alive, true
	}
	set := func(a bool, lines ...string) {
		mu.Lock()
		defer mu.Unlock()
		alive, extra = a, lines
	}
	d, _ := startDaemon(t, e, cfgWithBridge(), nil, func(o *vswitchd.Options) {
		o.SwitchProbe = probe
		o.ProbeInterval = 10 * time.Millisecond
		o.Degraded = func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(extra)
		}
	})
	if h := d.Health(e.Ctx); !h.OVSDBConnected || len(h.Degraded) != 0 {
		t.Fatalf("health at start: %+v, want connected and nothing degraded", h)
	}

	const sandboxLine = "sandbox ovs-vswitchd is not running: pid 42 exited (signal: killed)"
	set(false, sandboxLine)
	waitFor(t, "ovs-vswitchd reported down", func() bool {
		h := d.Health(e.Ctx)
		return len(h.Degraded) == 2 && strings.Contains(h.Degraded[0], "ovs-vswitchd is not running") &&
			h.Degraded[1] == sandboxLine
	})

	set(true)
	waitFor(t, "nothing degraded", func() bool { return len(d.Health(e.Ctx).Degraded) == 0 })
}
