//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// kill -9 of ovsplaned while several port transactions are in flight (issue 20): with
// ovs-vswitchd stopped (SIGSTOP: it keeps its OVSDB lock and connection but acknowledges
// nothing), the daemon, pipelining with --batch-depth 4 (and --batch-max-size 1, so that a
// request is a full batch), commits one transaction per wave of requests without waiting for
// the previous one's acknowledgement; its
// ovsplane_batch_inflight gauge, read just before the kill, shows four transactions committed
// and unacknowledged. After the kill ovs-vswitchd resumes and a new ovsplaned converges: every
// acknowledged port is still there, every transaction that was in flight landed exactly once
// (its ports present and ready, its delete applied), and nothing is orphaned or duplicated.
func TestDaemonKill9WithTransactionsInFlight(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS)
	ctx := timeout(t, 5*time.Minute)
	db := lab.StartOVSDB(t)
	vs := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	l := newDaemonLab(t, db)
	metricsAddr := testkit.FreeTCPAddr(t)
	if err := os.WriteFile(l.conf, []byte(daemonConfig+"metrics:\n  address: "+metricsAddr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const depth = 4
	args := []string{"--config", l.conf, "--data-dir", l.dir, "--ovsdb-endpoints", db.Endpoint, "--log-level", "info"}
	// Batches of one request: each is full, and only full batches overlap one in flight.
	p := l.run(ctx, 30*time.Second, (*daemonProc).kill, append(args, "--batch-depth", strconv.Itoa(depth), "--batch-max-size", "1")...)

	// Acknowledged before: base0 … base9, present.
	m := &churnModel{state: map[string]outcome{}}
	for i := range 10 {
		name := fmt.Sprintf("base%d", i)
		if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort(name)})); err != nil {
			t.Fatal(err)
		}
		m.set(name, present, nil, false)
	}
	inflight := func() float64 {
		body, err := scrape(ctx, metricsAddr)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := promValue(body, "ovsplane_batch_inflight")
		if !ok {
			t.Fatalf("no ovsplane_batch_inflight in /metrics:\n%s", body)
		}
		return v
	}
	if v := inflight(); v != 0 {
		t.Fatalf("ovsplane_batch_inflight %v with nothing pending", v)
	}

	if err := syscall.Kill(vs.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(vs.PID(), syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume)

	// One request a wave, so that a wave is one batch: three new ports, then a delete of an
	// acknowledged one. Each wave is sent once the previous one is committed.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	waves := []string{"pipe0", "pipe1", "pipe2", "-base0"}
	for i, w := range waves {
		wg.Go(func() {
			if name, del := strings.CutPrefix(w, "-"); del {
				_, _ = l.api.DeletePort(rctx, connect.NewRequest(&ovsplanev1.DeletePortRequest{Name: name}))
				return
			}
			_, _ = l.api.ApplyPort(rctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort(w)}))
		})
		lab.WaitFor(t, time.Minute, fmt.Sprintf("%d transactions in flight", i+1), func(context.Context) error {
			if v := inflight(); v != float64(i+1) {
				return fmt.Errorf("ovsplane_batch_inflight %v", v)
			}
			return nil
		})
	}
	atKill := inflight()
	p.kill()
	t.Logf("killed ovsplaned with ovsplane_batch_inflight = %v", atKill)
	if atKill != depth {
		t.Fatalf("ovsplane_batch_inflight %v just before the kill, want %d transactions in flight", atKill, depth)
	}
	cancel()
	wg.Wait()
	resume()

	// The transactions in flight had committed: their outcome is known now.
	for _, name := range []string{"pipe0", "pipe1", "pipe2"} {
		m.set(name, present, nil, false)
	}
	m.set("base0", absent, nil, false)
	final := l.run(ctx, 30*time.Second, (*daemonProc).kill, args...)
	l.checkConverged(ctx, m)
	final.stop(t)
}
