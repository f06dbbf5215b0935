package ovsdb

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"io"
	"testing"
	"time"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
)

func dialInternal(t *testing.T) (*Client, *ovsdbtest.Server) {
	t.Helper()
	srv := ovsdbtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{Endpoints: []string{srv.Endpoint()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
	p := newPlanner(tx.c, tx.gen)
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
		return c.NewTxn(1).EnsureBridge(BridgeSpec{Name: "br0", OtherConfig: map[string]string{"a": "1"}}).
			EnsurePort(PortSpec{Bridge: "br0", Name: "p1", Interfaces: []InterfaceSpec{{Name: "p1", Type: "internal"}}})
	}
	if _, err := tx().Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if ops := planOps(t, tx()); len(ops) != 0 {
		t.Errorf("re-ensuring unchanged objects plans %d operations:\n%s", len(ops), dumpOps(ops))
	}
}

var _ = errors.New
