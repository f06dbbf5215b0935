package ovsdbtest

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

// Row helpers for tests that write the Open_vSwitch database with a raw libovsdb client, as
// ovs-vsctl would: build a bridge or port, bump next_cfg, and wait for ovs-vswitchd's answer.

// opTimeout bounds one helper's transaction or wait; generous so slow CI never flakes.
const opTimeout = 30 * time.Second

// WaitFor polls cond every 10 ms until it returns nil, failing t with what and cond's last
// error after opTimeout. It asserts an outcome, never a speed.
func WaitFor(t testing.TB, what string, cond func() error) {
	t.Helper()
	testkit.Eventually(t, opTimeout, 10*time.Millisecond, func() error {
		if err := cond(); err != nil {
			return fmt.Errorf("%s: still not true after %v: %w", what, opTimeout, err)
		}
		return nil
	})
}

// opContext is a context that ends after opTimeout or with the test.
func opContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TransactOps runs ops and folds every operation or commit error into one error.
func TransactOps(ctx context.Context, c client.Client, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
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

// MustTransact runs ops and fails the test on any error.
func MustTransact(t testing.TB, c client.Client, ops ...ovsdb.Operation) []ovsdb.OperationResult {
	t.Helper()
	res, err := TransactOps(opContext(t), c, ops...)
	if err != nil {
		t.Fatalf("transact: %v", err)
	}
	return res
}

// Must returns a function that returns v, failing t when err is not nil: Must[T](t)(f()).
func Must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// OpenvSwitchRow returns the single Open_vSwitch row from c's cache.
func OpenvSwitchRow(c client.Client) (*vswitch.OpenvSwitch, error) {
	var rows []vswitch.OpenvSwitch
	if err := c.List(context.Background(), &rows); err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("%d Open_vSwitch rows", len(rows))
	}
	return &rows[0], nil
}

// InterfaceByName returns the named Interface from c's cache.
func InterfaceByName(c client.Client, name string) (*vswitch.Interface, error) {
	iface := &vswitch.Interface{Name: name}
	if err := c.Get(context.Background(), iface); err != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	return iface, nil
}

// BridgeSpec describes a bridge with ports of one interface each.
type BridgeSpec struct {
	Name         string
	DatapathType string
	Ports        []PortSpec
	NoAttach     bool // do not add the bridge to Open_vSwitch.bridges
}

// PortSpec describes a port of one interface, named like the port.
type PortSpec struct {
	Name          string
	Type          string
	Options       map[string]string
	OfportRequest *int
}

// CreateBridgeOps returns one transaction's operations creating the bridge,
// its local port and its ports, and bumping next_cfg, like ovs-vsctl.
func CreateBridgeOps(t testing.TB, c client.Client, b BridgeSpec) []ovsdb.Operation {
	t.Helper()
	ovs, err := OpenvSwitchRow(c)
	if err != nil {
		t.Fatal(err)
	}
	var ops []ovsdb.Operation
	br := &vswitch.Bridge{UUID: "br_" + sanitize(b.Name), Name: b.Name, DatapathType: b.DatapathType}
	all := append([]PortSpec{{Name: b.Name, Type: "internal"}}, b.Ports...)
	for _, p := range all {
		ops = append(ops, PortOps(t, c, p)...)
		br.Ports = append(br.Ports, "port_"+sanitize(p.Name))
	}
	ops = append(ops, Must[[]ovsdb.Operation](t)(c.Create(br))...)
	if !b.NoAttach {
		ops = append(ops, Must[[]ovsdb.Operation](t)(c.Where(ovs).Mutate(ovs,
			model.Mutation{Field: &ovs.Bridges, Mutator: ovsdb.MutateOperationInsert, Value: []string{br.UUID}}))...)
	}
	return append(ops, BumpNextCfg(t, c)...)
}

// PortOps creates a Port named like its single Interface (named UUIDs
// port_NAME and iface_NAME).
func PortOps(t testing.TB, c client.Client, p PortSpec) []ovsdb.Operation {
	t.Helper()
	iface := &vswitch.Interface{UUID: "iface_" + sanitize(p.Name), Name: p.Name, Type: p.Type, Options: p.Options, OfportRequest: p.OfportRequest}
	port := &vswitch.Port{UUID: "port_" + sanitize(p.Name), Name: p.Name, Interfaces: []string{iface.UUID}}
	ops := Must[[]ovsdb.Operation](t)(c.Create(iface))
	return append(ops, Must[[]ovsdb.Operation](t)(c.Create(port))...)
}

// AddPortOps adds a port to an existing bridge and bumps next_cfg.
func AddPortOps(t testing.TB, c client.Client, bridge string, p PortSpec) []ovsdb.Operation {
	t.Helper()
	ops := PortOps(t, c, p)
	br := &vswitch.Bridge{Name: bridge}
	ops = append(ops, Must[[]ovsdb.Operation](t)(c.Where(br).Mutate(br,
		model.Mutation{Field: &br.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{"port_" + sanitize(p.Name)}}))...)
	return append(ops, BumpNextCfg(t, c)...)
}

// DelPortOps removes a port from a bridge (garbage collection deletes the
// rows) and bumps next_cfg.
func DelPortOps(t testing.TB, c client.Client, bridge, port string) []ovsdb.Operation {
	t.Helper()
	p := &vswitch.Port{Name: port}
	if err := c.Get(context.Background(), p); err != nil {
		t.Fatalf("port %s: %v", port, err)
	}
	br := &vswitch.Bridge{Name: bridge}
	ops := Must[[]ovsdb.Operation](t)(c.Where(br).Mutate(br,
		model.Mutation{Field: &br.Ports, Mutator: ovsdb.MutateOperationDelete, Value: []string{p.UUID}}))
	return append(ops, BumpNextCfg(t, c)...)
}

// BumpNextCfg increments Open_vSwitch.next_cfg as ovs-vsctl does.
func BumpNextCfg(t testing.TB, c client.Client) []ovsdb.Operation {
	t.Helper()
	ovs, err := OpenvSwitchRow(c)
	if err != nil {
		t.Fatal(err)
	}
	return Must[[]ovsdb.Operation](t)(c.Where(ovs).Mutate(ovs,
		model.Mutation{Field: &ovs.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1}))
}

// ApplyAndWait commits ops (which must bump next_cfg) and waits until
// ovs-vswitchd acknowledged them (cur_cfg >= the new next_cfg).
func ApplyAndWait(t testing.TB, c client.Client, ops ...ovsdb.Operation) {
	t.Helper()
	MustTransact(t, c, ops...)
	ovs, err := OpenvSwitchRow(c)
	if err != nil {
		t.Fatal(err)
	}
	want := ovs.NextCfg
	WaitFor(t, fmt.Sprintf("cur_cfg reaches %d", want), func() error {
		ovs, err := OpenvSwitchRow(c)
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
