package ovsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

func dialInternal(t testing.TB) (*Client, *ovsdbtest.Server) {
	t.Helper()
	return dialInternalPath(t, false)
}

// dialInternalPath is dialInternal reading libovsdb's cache (legacy) or the compact replica.
func dialInternalPath(t testing.TB, legacy bool) (*Client, *ovsdbtest.Server) {
	t.Helper()
	srv := ovsdbtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{Endpoints: []string{srv.Endpoint()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		libovsdbCache: legacy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, srv
}

// planOps plans tx against the current cache without sending it.
func planOps(t *testing.T, tx *Txn) []libovsdb.Operation {
	t.Helper()
	if tx.err != nil {
		t.Fatal(tx.err)
	}
	p := newPlanner(context.Background(), tx.c, tx.gen)
	for _, f := range tx.intents {
		if err := f(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	return p.ops
}

func dumpOps(ops []libovsdb.Operation) string {
	b, _ := json.MarshalIndent(ops, "", " ")
	return string(b)
}

func TestIdempotentPlanIsEmpty(t *testing.T) {
	c, _ := dialInternal(t)
	ctx := context.Background()
	tx := func() *Txn {
		return c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", OtherConfig: map[string]string{"a": "1"}}, nil).
			EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Interfaces: []model.Interface{{Name: "p1", Type: "internal"}}}})
	}
	if _, err := tx().Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if ops := planOps(t, tx()); len(ops) != 0 {
		t.Errorf("re-ensuring unchanged objects plans %d operations:\n%s", len(ops), dumpOps(ops))
	}
}

var _ = errors.New

func TestBridgePortsAreMutatedNeverRewritten(t *testing.T) {
	c, _ := dialInternal(t)
	ctx := context.Background()
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	tx := c.NewTxn(1)
	for _, n := range []string{"p1", "p2", "p3"} {
		tx.EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: n}})
	}
	ops := planOps(t, tx)
	var bridgeOps []libovsdb.Operation
	for _, op := range ops {
		if op.Table == "Bridge" && op.Op != libovsdb.OperationWait {
			bridgeOps = append(bridgeOps, op)
		}
	}
	if len(bridgeOps) != 1 {
		t.Fatalf("want exactly one Bridge operation for three ports, got %d:\n%s", len(bridgeOps), dumpOps(bridgeOps))
	}
	op := bridgeOps[0]
	if op.Op != libovsdb.OperationMutate || len(op.Mutations) != 1 || op.Mutations[0].Column != "ports" ||
		op.Mutations[0].Mutator != libovsdb.MutateOperationInsert {
		t.Errorf("Bridge.ports must change by one mutate insert, got:\n%s", dumpOps(bridgeOps))
	}
	if set, ok := op.Mutations[0].Value.(libovsdb.OvsSet); !ok || len(set.GoSet) != 3 {
		t.Errorf("mutate must insert the three new ports, got %v", op.Mutations[0].Value)
	}
}

func TestConcurrentWriterCausesRetryNotLostUpdate(t *testing.T) {
	c, srv := dialInternal(t)
	ctx := context.Background()
	// p1 starts with a non-empty other_config: libovsdb's in-memory server skips comparing
	// empty (default) values in "wait" rows, unlike ovsdb-server.
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: "p1", OtherConfig: map[string]string{"mine": "0"}}}).
		Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	other := srv.Client(t)
	// Between planning and sending our delete of br0, another writer adds its own port to br0.
	// The guard on Bridge.ports must fail our first attempt; the retry must then refuse to
	// delete a bridge that now holds a foreign port — the foreign port survives.
	fired := false
	c.beforeTransact = func() {
		if fired {
			return
		}
		fired = true
		addForeignPort(t, other, "br0", "theirs")
	}
	_, err := c.NewTxn(1).DeleteBridge("br0").Commit(ctx, CommitOptions{NoWait: true})
	if !errors.Is(err, ErrNotOwned) {
		t.Fatalf("DeleteBridge after a concurrent foreign add-port: err = %v, want ErrNotOwned", err)
	}
	c.beforeTransact = nil
	if _, err := c.Interface("theirs"); err != nil {
		t.Errorf("foreign interface lost: %v", err)
	}

	// A concurrent change to a port we are updating makes the first attempt fail and the
	// second succeed on fresh state.
	fired = false
	c.beforeTransact = func() {
		if fired {
			return
		}
		fired = true
		touchPortOtherConfig(t, other, "p1")
	}
	res, err := c.NewTxn(2).EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Tag: ptrInt(5),
		OtherConfig: map[string]string{"mine": "1"}}}).Commit(ctx, CommitOptions{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 {
		t.Errorf("Attempts = %d, want 2 (first attempt must be rejected by its wait guard)", res.Attempts)
	}
	// The retry planned from fresh state: the port is ours as desired (the operator's key is
	// removed from an owned row, as desired state says), and nothing was written twice.
	p := &vswitch.Port{Name: "p1"}
	if err := other.Get(ctx, p); err != nil {
		t.Fatal(err)
	}
	eventuallyT(t, func() bool {
		_ = other.Get(ctx, p)
		return p.Tag != nil && *p.Tag == 5 && len(p.OtherConfig) == 1 && p.OtherConfig["mine"] == "1"
	}, "port p1 not brought to its desired state by the retried commit (other_config must be exactly {mine=1})")
}

func ptrInt(v int) *int { return &v }

func eventuallyT(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTranslateResults(t *testing.T) {
	const u = "6a1f0c8e-2d3b-4c5d-8e9f-0a1b2c3d4e5f"
	ops := []libovsdb.Operation{{Op: libovsdb.OperationWait, Table: "Port"}, {Op: libovsdb.OperationInsert, Table: "Interface"},
		deleteOp("Interface", u)}
	refs := []objRef{{"Port", "p1"}, {"Interface", "eth0"}, {"Interface", "old0"}}
	cases := []struct {
		name    string
		results []libovsdb.OperationResult
		kind    error
		table   string
		row     string
		column  string
	}{
		{"wait guard", []libovsdb.OperationResult{{Error: "timed out"}}, ErrConflict, "Port", "p1", ""},
		{"commit-time index", []libovsdb.OperationResult{{}, {}, {}, {Error: "constraint violation",
			Details: `Transaction causes multiple rows in "Interface" table to have identical values (eth0) for index on column "name".`}},
			ErrConstraintViolation, "Interface", "eth0", "name"},
		{"referential", []libovsdb.OperationResult{{}, {}, {}, {Error: "referential integrity violation",
			Details: `cannot delete Interface row ` + u + ` because of 1 remaining reference(s)`}}, ErrReferentialIntegrity, "Interface", "old0", ""},
		{"op error", []libovsdb.OperationResult{{}, {Error: "constraint violation", Details: `column "ofport_request" out of range`}},
			ErrConstraintViolation, "Interface", "eth0", "ofport_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := translateResults(tc.results, ops, refs)
			var oe *OpError
			if !errors.As(err, &oe) || !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want *OpError matching %v", err, tc.kind)
			}
			if oe.Table != tc.table || oe.Row != tc.row || oe.Column != tc.column {
				t.Errorf("OpError names %s/%s/%s, want %s/%s/%s", oe.Table, oe.Row, oe.Column, tc.table, tc.row, tc.column)
			}
		})
	}
	if err := translateResults([]libovsdb.OperationResult{{}, {}, {}}, ops, refs); err != nil {
		t.Errorf("success translated to %v", err)
	}
}

func TestPlannerRefusalsAreNotRetried(t *testing.T) {
	c, srv := dialInternal(t)
	ctx := context.Background()
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: "a",
		Interfaces: []model.Interface{{Name: "x"}}}}).Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	// Keep the cache busy with unrelated changes while the commit runs: a refusal must still
	// come back at once, as itself, not as ErrConflict after all attempts.
	other := srv.Client(t)
	attempts := 0
	c.beforeTransact = func() { attempts++ }
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			touchPortOtherConfigValue(t, other, "a", fmt.Sprint(i))
		}
	}()
	_, err := c.NewTxn(1).EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: "b", Interfaces: []model.Interface{{Name: "x"}}}}).
		Commit(ctx, CommitOptions{NoWait: true})
	close(stop)
	<-done
	if !errors.Is(err, ErrConstraintViolation) || errors.Is(err, ErrConflict) {
		t.Fatalf("interface name clash: err = %v, want ErrConstraintViolation (not retried into ErrConflict)", err)
	}
	if attempts != 0 {
		t.Errorf("a planner refusal reached the server %d times", attempts)
	}
}

func TestNothingToChangeDoesNotReconfigureVswitchd(t *testing.T) {
	c, _ := dialInternal(t)
	ctx := context.Background()
	tx := func() *Txn { return c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil) }
	if _, err := tx().Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	before := c.cachedRoot().NextCfg
	// No ovs-vswitchd runs here: if the commit bumped next_cfg it would wait forever.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := tx().Commit(wctx, CommitOptions{})
	if err != nil && !errors.Is(err, ErrTimeout) {
		t.Fatal(err)
	}
	if res != nil && res.Ops != 0 {
		t.Errorf("unchanged ensure sent %d operations", res.Ops)
	}
	if after := c.cachedRoot().NextCfg; after != before {
		t.Errorf("next_cfg went from %d to %d for a transaction with nothing to change", before, after)
	}
}
