package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// gatedCommitter counts Commit calls and holds the first one until gate is closed.
type gatedCommitter struct {
	*portDoor
	gate    chan struct{}
	commits atomic.Int64
}

func (g *gatedCommitter) Commit(ctx context.Context, reqs []PortRequest) ([]batch.Outcome[PortResult], error) {
	if g.commits.Add(1) == 1 {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.portDoor.Commit(ctx, reqs)
}

// ovsdbEnv starts an in-memory OVSDB with a simulated ovs-vswitchd that attaches only net_tap
// devargs, and returns a client on it with the netdev bridge br0 created.
func ovsdbEnv(t *testing.T) (context.Context, *ovsdb.Client) {
	t.Helper()
	srv := ovsdbtest.Start(t)
	ovsdbtest.StartOVSVswitchd(t, srv, simvswitchd.WithDevargs(simvswitchd.DevargsPolicy{Prefixes: []string{"net_tap"}}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{srv.Endpoint()},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", DatapathType: "netdev"}, nil).
		Commit(ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	return ctx, c
}

func TestPortDoorAgainstSimulatedVswitchd(t *testing.T) {
	ctx, c := ovsdbEnv(t)

	const (
		callers  = 50
		perCall  = 4
		maxSize  = 64
		badVsd   = "bad-dpdk"  // refused by ovs-vswitchd: per-interface error, batch committed
		badPlan  = "orphan-p0" // refused by the planner: bridge missing, whole txn refused
		extra    = 2
		total    = callers*perCall + extra
		maxBatch = 1 + (total-1+maxSize-1)/maxSize + 1 // see below
	)
	g := &gatedCommitter{portDoor: newDoor(c, 2), gate: make(chan struct{})}
	b := startPorts(t, ctx, g, batch.Options[PortRequest]{MaxSize: maxSize, Divisible: g.Divisible})

	results := make(chan portOutcome, total)
	var wg sync.WaitGroup
	submit := func(spec ovsdb.PortOn) {
		defer wg.Done()
		r, err := b.Submit(ctx, PortRequest{Spec: spec})
		results <- portOutcome{spec.Port.Name, r, err}
	}
	for i := range callers {
		wg.Add(1)
		go func() { // one caller, with perCall requests outstanding at once
			defer wg.Done()
			for j := range perCall {
				wg.Add(1)
				go submit(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("p%d-%d", i, j),
					Interfaces: []model.Interface{{Name: fmt.Sprintf("p%d-%d", i, j), Type: "internal"}}}})
			}
		}()
	}
	wg.Add(2)
	go submit(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: badVsd, Interfaces: []model.Interface{{
		Name: badVsd, Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:99:00.0"}}}}})
	go submit(ovsdb.PortOn{Bridge: "no-such-bridge", Port: model.Port{Name: badPlan}})

	// Hold the first commit until every request is queued or in it: the bound below then
	// follows from the design alone. The first batch takes k ≥ 1 requests, the other total-k
	// go in ceil((total-k)/maxSize) full-or-last batches, and the planner refusal costs one
	// retry of the batch that holds it.
	eventually(t, "all requests queued", func() bool {
		st := b.Stats()
		return st.Queued+st.InFlightRequests == total
	})
	close(g.gate)
	wg.Wait()
	close(results)

	ofports := map[int]string{}
	for x := range results {
		switch x.name {
		case badVsd:
			if !errors.Is(x.err, ovsdb.ErrVswitchd) || len(x.r.Interfaces) != 1 || x.r.Interfaces[0].Ofport != -1 {
				t.Errorf("%s: %+v, %v; want ofport -1 and an error matching ErrVswitchd", x.name, x.r, x.err)
			} else {
				t.Logf("%s: %v", x.name, x.err)
			}
		case badPlan:
			if !errors.Is(x.err, ovsdb.ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", x.name, x.err)
			} else {
				t.Logf("%s: %v", x.name, x.err)
			}
		default:
			if x.err != nil || len(x.r.Interfaces) != 1 || x.r.Interfaces[0].Ofport <= 0 {
				t.Errorf("%s: %+v, %v; want an ofport", x.name, x.r, x.err)
				continue
			}
			of := x.r.Interfaces[0].Ofport
			if prev, dup := ofports[of]; dup {
				t.Errorf("%s and %s both got ofport %d", prev, x.name, of)
			}
			ofports[of] = x.name
			if st, err := c.Interface(x.name); err != nil || st.Ofport != of {
				t.Errorf("%s: OVSDB says %+v, %v; caller got ofport %d", x.name, st, err, of)
			}
		}
	}
	if len(ofports) != callers*perCall {
		t.Errorf("%d ports got an ofport, want %d", len(ofports), callers*perCall)
	}
	st := b.Stats()
	t.Logf("ensure: %d requests, %d batches, %d commits (%d isolation retries), sizes %v",
		total, st.Batches, st.Commits, st.Retries, st.BatchSizes)
	if st.Commits > maxBatch {
		t.Errorf("%d commits for %d requests, want at most %d", st.Commits, total, maxBatch)
	}
	// The planner refusal names its port, so isolating it costs at most one retry (none when
	// it was alone in its batch).
	if st.Retries > 1 {
		t.Errorf("%d isolation retries, want at most 1", st.Retries)
	}

	// Then delete them all, 50 callers each deleting its ports one after the other: no gate,
	// so batch sizes follow the load; every delete must succeed.
	before := st.Commits
	errs := make(chan error, callers*perCall)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perCall {
				if _, err := b.Submit(ctx, PortRequest{Delete: true,
					Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("p%d-%d", i, j)}}}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for of, name := range ofports {
		if _, err := c.Interface(name); !errors.Is(err, ovsdb.ErrNotFound) {
			t.Errorf("%s (ofport %d) still there: %v", name, of, err)
		}
	}
	t.Logf("delete: %d requests in %d commits", callers*perCall, b.Stats().Commits-before)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// An invalid spec is refused by package ovsdb with an error that names no row (so no ItemError):
// the Batcher bisects the batch and only the invalid request fails.
func TestPortDoorBisectsUnattributedRefusal(t *testing.T) {
	ctx, c := ovsdbEnv(t)
	clk := newFakeClock() // never advanced: with Linger, the batch goes when all 16 are queued
	pc := newDoor(c, 3)
	b := startPorts(t, ctx, pc, batch.Options[PortRequest]{MaxSize: 16, Linger: true, Clock: clk})
	specs := make([]ovsdb.PortOn, 16)
	for i := range specs {
		specs[i] = ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("q%d", i)}}
		if i == 11 {
			specs[i].Port.Tag = new(5000) // out of range: ErrInvalid before anything is sent
		}
	}
	results := submitEach(ctx, b, specs)
	for range 16 {
		x := <-results
		if x.name == "q11" {
			if !errors.Is(x.err, ovsdb.ErrInvalid) {
				t.Errorf("q11: %v, want ErrInvalid", x.err)
			}
			continue
		}
		if x.err != nil || len(x.r.Interfaces) != 1 || x.r.Interfaces[0].Ofport <= 0 {
			t.Errorf("%s: %+v, %v; want an ofport", x.name, x.r, x.err)
		}
	}
	st := b.Stats()
	t.Logf("16 requests, %d batches, %d commits", st.Batches, st.Commits)
	// One batch of 16, then at most two commits per level of the binary split (log2 16 = 4).
	if st.Batches != 1 || st.Commits > 1+2*4 {
		t.Errorf("%d batches, %d commits; want 1 batch and at most 9 commits", st.Batches, st.Commits)
	}
}
