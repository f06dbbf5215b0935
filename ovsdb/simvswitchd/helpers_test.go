package simvswitchd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// deadline is how long polling helpers wait; generous so slow CI never flakes.
const deadline = 30 * time.Second

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// transact runs ops and folds every operation or commit error into one error.
func transact(ctx context.Context, c client.Client, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	res, err := c.Transact(ctx, ops...)
	if err != nil {
		return res, err
	}
	opErrs, err := ovsdb.CheckOperationResults(res, ops)
	if err == nil {
		return res, nil
	}
	all := []error{err}
	for _, e := range opErrs {
		all = append(all, e)
	}
	return res, errors.Join(all...)
}

// mustTransact runs ops and fails the test on any error.
func mustTransact(t testing.TB, c client.Client, ops ...ovsdb.Operation) []ovsdb.OperationResult {
	t.Helper()
	res, err := transact(ctxT(t), c, ops...)
	if err != nil {
		t.Fatalf("transact: %v", err)
	}
	return res
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// eventually polls cond until it returns nil, failing t with the last error
// after the generous deadline. It never asserts anything about speed.
func eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	testkit.Eventually(t, deadline, 10*time.Millisecond, func() error {
		if err := cond(); err != nil {
			return fmt.Errorf("%s: still not true after %v: %w", what, deadline, err)
		}
		return nil
	})
}

// ovsRow returns the single Open_vSwitch row from c's cache.
func ovsRow(c client.Client) (*vswitch.OpenvSwitch, error) {
	var rows []vswitch.OpenvSwitch
	if err := c.List(context.Background(), &rows); err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("%d Open_vSwitch rows", len(rows))
	}
	return &rows[0], nil
}

// ifaceByName returns the named Interface from c's cache.
func ifaceByName(c client.Client, name string) (*vswitch.Interface, error) {
	iface := &vswitch.Interface{Name: name}
	if err := c.Get(context.Background(), iface); err != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	return iface, nil
}

// bridgeSpec describes a bridge with ports of one interface each.
type bridgeSpec struct {
	name     string
	dpType   string
	ports    []ifaceSpec
	noAttach bool // do not add the bridge to Open_vSwitch.bridges
}

type ifaceSpec struct {
	name    string
	typ     string
	options map[string]string
	request *int
}

// createBridgeOps returns one transaction's operations creating the bridge,
// its local port and its ports, and bumping next_cfg, like ovs-vsctl.
func createBridgeOps(t testing.TB, c client.Client, b bridgeSpec) []ovsdb.Operation {
	t.Helper()
	ovs, err := ovsRow(c)
	if err != nil {
		t.Fatal(err)
	}
	var ops []ovsdb.Operation
	br := &vswitch.Bridge{UUID: "br_" + sanitize(b.name), Name: b.name, DatapathType: b.dpType}
	all := append([]ifaceSpec{{name: b.name, typ: "internal"}}, b.ports...)
	for _, p := range all {
		ops = append(ops, portOps(t, c, p)...)
		br.Ports = append(br.Ports, "port_"+sanitize(p.name))
	}
	ops = append(ops, must[[]ovsdb.Operation](t)(c.Create(br))...)
	if !b.noAttach {
		ops = append(ops, must[[]ovsdb.Operation](t)(c.Where(ovs).Mutate(ovs,
			model.Mutation{Field: &ovs.Bridges, Mutator: ovsdb.MutateOperationInsert, Value: []string{br.UUID}}))...)
	}
	return append(ops, bumpNextCfg(t, c)...)
}

// portOps creates a Port named like its single Interface (named UUIDs
// port_NAME and iface_NAME).
func portOps(t testing.TB, c client.Client, p ifaceSpec) []ovsdb.Operation {
	t.Helper()
	iface := &vswitch.Interface{UUID: "iface_" + sanitize(p.name), Name: p.name, Type: p.typ, Options: p.options, OfportRequest: p.request}
	port := &vswitch.Port{UUID: "port_" + sanitize(p.name), Name: p.name, Interfaces: []string{iface.UUID}}
	ops := must[[]ovsdb.Operation](t)(c.Create(iface))
	return append(ops, must[[]ovsdb.Operation](t)(c.Create(port))...)
}

// addPortOps adds a port to an existing bridge and bumps next_cfg.
func addPortOps(t testing.TB, c client.Client, bridge string, p ifaceSpec) []ovsdb.Operation {
	t.Helper()
	ops := portOps(t, c, p)
	br := &vswitch.Bridge{Name: bridge}
	ops = append(ops, must[[]ovsdb.Operation](t)(c.Where(br).Mutate(br,
		model.Mutation{Field: &br.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{"port_" + sanitize(p.name)}}))...)
	return append(ops, bumpNextCfg(t, c)...)
}

// delPortOps removes a port from a bridge (garbage collection deletes the
// rows) and bumps next_cfg.
func delPortOps(t testing.TB, c client.Client, bridge, port string) []ovsdb.Operation {
	t.Helper()
	p := &vswitch.Port{Name: port}
	if err := c.Get(context.Background(), p); err != nil {
		t.Fatalf("port %s: %v", port, err)
	}
	br := &vswitch.Bridge{Name: bridge}
	ops := must[[]ovsdb.Operation](t)(c.Where(br).Mutate(br,
		model.Mutation{Field: &br.Ports, Mutator: ovsdb.MutateOperationDelete, Value: []string{p.UUID}}))
	return append(ops, bumpNextCfg(t, c)...)
}

// bumpNextCfg increments Open_vSwitch.next_cfg as ovs-vsctl does.
func bumpNextCfg(t testing.TB, c client.Client) []ovsdb.Operation {
	t.Helper()
	ovs, err := ovsRow(c)
	if err != nil {
		t.Fatal(err)
	}
	return must[[]ovsdb.Operation](t)(c.Where(ovs).Mutate(ovs,
		model.Mutation{Field: &ovs.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1}))
}

// applyAndWait commits ops (which must bump next_cfg) and waits until
// ovs-vswitchd acknowledged them (cur_cfg >= the new next_cfg).
func applyAndWait(t testing.TB, c client.Client, ops ...ovsdb.Operation) {
	t.Helper()
	mustTransact(t, c, ops...)
	ovs, err := ovsRow(c)
	if err != nil {
		t.Fatal(err)
	}
	want := ovs.NextCfg
	eventually(t, fmt.Sprintf("cur_cfg reaches %d", want), func() error {
		ovs, err := ovsRow(c)
		if err != nil {
			return err
		}
		if ovs.CurCfg < want {
			return fmt.Errorf("cur_cfg %d next_cfg %d", ovs.CurCfg, ovs.NextCfg)
		}
		return nil
	})
}

func sanitize(name string) string {
	out := []byte(name)
	for i, ch := range out {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9') {
			out[i] = '_'
		}
	}
	return string(out)
}

func ptr[T any](v T) *T { return &v }
