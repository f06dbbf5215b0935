package ovsdb

import (
	"context"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

func mustTransact(t *testing.T, c client.Client, ops []libovsdb.Operation) {
	t.Helper()
	res, err := c.Transact(context.Background(), ops...)
	if err != nil {
		t.Fatalf("foreign transact: %v", err)
	}
	if _, err := libovsdb.CheckOperationResults(res, ops); err != nil {
		t.Fatalf("foreign transact: %v %+v", err, res)
	}
}

// addForeignPort adds an untagged port to bridge through the raw libovsdb client c.
func addForeignPort(t *testing.T, c client.Client, bridge, name string) {
	t.Helper()
	ifOps, err := c.Create(&vswitch.Interface{UUID: "fif", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	portOps, err := c.Create(&vswitch.Port{UUID: "fport", Name: name, Interfaces: []string{"fif"}})
	if err != nil {
		t.Fatal(err)
	}
	br := &vswitch.Bridge{Name: bridge}
	if err := c.Get(context.Background(), br); err != nil {
		t.Fatalf("foreign client cannot see bridge %s: %v", bridge, err)
	}
	mut, err := c.Where(br).Mutate(br, model.Mutation{Field: &br.Ports, Mutator: libovsdb.MutateOperationInsert, Value: []string{"fport"}})
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, append(append(ifOps, portOps...), mut...))
}

// touchPortOtherConfig sets an other_config key on a port, as an operator's ovs-vsctl set would.
func touchPortOtherConfig(t *testing.T, c client.Client, name string) {
	t.Helper()
	p := &vswitch.Port{Name: name}
	if err := c.Get(context.Background(), p); err != nil {
		t.Fatalf("foreign client cannot see port %s: %v", name, err)
	}
	ops, err := c.Where(p).Mutate(p, model.Mutation{Field: &p.OtherConfig, Mutator: libovsdb.MutateOperationInsert,
		Value: map[string]string{"touched": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, ops)
}

// touchPortOtherConfigValue rewrites other_config:touched on a port (delete then insert).
func touchPortOtherConfigValue(t *testing.T, c client.Client, name, v string) {
	t.Helper()
	p := &vswitch.Port{Name: name}
	if err := c.Get(context.Background(), p); err != nil {
		return
	}
	ops, err := c.Where(p).Mutate(p,
		model.Mutation{Field: &p.OtherConfig, Mutator: libovsdb.MutateOperationDelete, Value: []string{"touched"}},
		model.Mutation{Field: &p.OtherConfig, Mutator: libovsdb.MutateOperationInsert, Value: map[string]string{"touched": v}})
	if err != nil {
		t.Error(err)
		return
	}
	_, _ = c.Transact(context.Background(), ops...)
}
