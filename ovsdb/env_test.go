package ovsdb_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// env is one in-memory OVSDB with a client under test and a raw "foreign" libovsdb client that
// plays the other writers (ovs-vsctl, os-vif).
type env struct {
	srv     *ovsdbtest.Server
	c       *ovsdb.Client
	foreign client.Client
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type testWriter struct{}

func (testWriter) Write(p []byte) (int, error) { return len(p), nil }

func newEnv(t *testing.T, mod ...func(*ovsdb.Config)) *env {
	t.Helper()
	srv := ovsdbtest.Start(t)
	cfg := ovsdb.Config{Endpoints: []string{srv.Endpoint()}, Logger: quietLogger()}
	for _, m := range mod {
		m(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ovsdb.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(c.Close)
	return &env{srv: srv, c: c, foreign: srv.Client(t)}
}

// newClient dials one more client to the env's server with cfg (endpoint and logger filled in).
func newClient(t *testing.T, e *env, cfg ovsdb.Config) *ovsdb.Client {
	t.Helper()
	cfg.Endpoints = []string{e.srv.Endpoint()}
	cfg.Logger = quietLogger()
	c, err := ovsdb.Dial(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// commit commits with NoWait and fails the test on error.
func commit(t *testing.T, tx *ovsdb.Txn) *ovsdb.Result {
	t.Helper()
	res, err := tx.Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return res
}

// eventually polls cond until it returns "" or 20 s pass; the message of the last failure is
// reported. It asserts an outcome, never a duration.
func eventually(t *testing.T, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// foreignGet reads a row by name through the foreign client's cache, after it caught up.
func getBridge(t *testing.T, e *env, name string) *vswitch.Bridge {
	t.Helper()
	var out *vswitch.Bridge
	eventually(t, func() string {
		b := &vswitch.Bridge{Name: name}
		if err := e.foreign.Get(ctxT(t), b); err != nil {
			return "bridge " + name + " not visible: " + err.Error()
		}
		out = b
		return ""
	})
	return out
}

func getPort(ctx context.Context, e *env, name string) (*vswitch.Port, error) {
	p := &vswitch.Port{Name: name}
	return p, e.foreign.Get(ctx, p)
}

func getIface(ctx context.Context, e *env, name string) (*vswitch.Interface, error) {
	i := &vswitch.Interface{Name: name}
	return i, e.foreign.Get(ctx, i)
}

// foreignTransact runs raw operations as another writer and fails the test on any error.
func foreignTransact(t *testing.T, e *env, build func() ([]ovsdbOp, error)) {
	t.Helper()
	ops, err := build()
	if err != nil {
		t.Fatalf("foreign ops: %v", err)
	}
	res, err := e.foreign.Transact(ctxT(t), ops...)
	if err != nil {
		t.Fatalf("foreign transact: %v", err)
	}
	for i, r := range res {
		if r.Error != "" {
			t.Fatalf("foreign transact op %d: %s: %s", i, r.Error, r.Details)
		}
	}
}

func ptr[T any](v T) *T { return &v }

type ovsdbOp = libovsdb.Operation

// foreignBridge creates, as another writer, an untagged bridge holding untagged ports.
func foreignBridge(t *testing.T, e *env, name string, ports ...string) {
	t.Helper()
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		br := &vswitch.Bridge{UUID: "fbr", Name: name, ExternalIDs: map[string]string{"who": "ovs-vsctl"}}
		var models []model.Model
		for i, pn := range ports {
			ifc := &vswitch.Interface{UUID: fmt.Sprintf("fif%d", i), Name: pn}
			port := &vswitch.Port{UUID: fmt.Sprintf("fp%d", i), Name: pn, Interfaces: []string{ifc.UUID}}
			br.Ports = append(br.Ports, port.UUID)
			models = append(models, ifc, port)
		}
		var ops []ovsdbOp
		for _, m := range append(models, br) {
			op, err := e.foreign.Create(m)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op...)
		}
		var roots []vswitch.OpenvSwitch
		if err := e.foreign.List(ctxT(t), &roots); err != nil || len(roots) != 1 {
			return nil, fmt.Errorf("root: %v (%d rows)", err, len(roots))
		}
		mut, err := e.foreign.Where(&roots[0]).Mutate(&roots[0], model.Mutation{
			Field: &roots[0].Bridges, Mutator: libovsdb.MutateOperationInsert, Value: []string{"fbr"}})
		return append(ops, mut...), err
	})
}

// foreignAddPort adds, as another writer, an untagged port to an existing bridge with a mutate.
func foreignAddPort(t *testing.T, e *env, bridge, name string) {
	t.Helper()
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		ifc := &vswitch.Interface{UUID: "fif", Name: name}
		port := &vswitch.Port{UUID: "fport", Name: name, Interfaces: []string{"fif"}}
		ops, err := e.foreign.Create(ifc)
		if err != nil {
			return nil, err
		}
		pops, err := e.foreign.Create(port)
		if err != nil {
			return nil, err
		}
		ops = append(ops, pops...)
		br := getBridge(t, e, bridge)
		mut, err := e.foreign.Where(br).Mutate(br, model.Mutation{
			Field: &br.Ports, Mutator: libovsdb.MutateOperationInsert, Value: []string{"fport"}})
		return append(ops, mut...), err
	})
}
