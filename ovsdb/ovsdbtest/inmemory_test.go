package ovsdbtest

// Facts about libovsdb v0.8.1's in-memory server that the ovsdb client (and
// its tests) rely on, or must not rely on. Each test pins one finding; the
// package documentation summarises them.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// seedBridge creates br0 with port p0 (interface p0) without a simulator.
func seedBridge(t *testing.T, c client.Client) {
	t.Helper()
	MustTransact(t, c, CreateBridgeOps(t, c, BridgeSpec{Name: "br0", Ports: []PortSpec{{Name: "p0"}}})...)
}

func TestInMemorySeed(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	ovs, err := OpenvSwitchRow(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := *ovs.OVSVersion; got != "3.1.0" {
		t.Errorf("ovs_version %q", got)
	}
	if got := *ovs.DbVersion; got != "8.3.1" {
		t.Errorf("db_version %q", got)
	}
	if len(ovs.IfaceTypes) != 18 || len(ovs.DatapathTypes) != 2 {
		t.Errorf("iface_types %v datapath_types %v", ovs.IfaceTypes, ovs.DatapathTypes)
	}
	if !strings.HasPrefix(s.Endpoint(), "unix:/") || len(s.Sock()) > 107 {
		t.Errorf("endpoint %q", s.Endpoint())
	}
}

func TestInMemoryWait(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	ovs := Must[*vswitch.OpenvSwitch](t)(OpenvSwitchRow(c))
	MustTransact(t, c, BumpNextCfg(t, c)...) // next_cfg = 1
	zero := 0
	wait := func(until ovsdb.WaitCondition, row *vswitch.OpenvSwitch, field any) error {
		ops := Must[[]ovsdb.Operation](t)(c.Where(ovs).Wait(until, &zero, row, field))
		_, err := TransactOps(opContext(t), c, ops...)
		return err
	}
	tests := []struct {
		name    string
		until   ovsdb.WaitCondition
		nextCfg int
		wantErr string
	}{
		{"equal holds", ovsdb.WaitConditionEqual, 1, ""},
		{"equal fails with timeout 0", ovsdb.WaitConditionEqual, 7, "timed out"},
		{"not-equal holds", ovsdb.WaitConditionNotEqual, 7, ""},
		{"not-equal fails with timeout 0", ovsdb.WaitConditionNotEqual, 1, "timed out"},
		// Quirk: a column holding its default value in the wait row is
		// skipped, so waiting for next_cfg == 0 succeeds although it is 1.
		// Real ovsdb-server compares it and times out.
		{"default value in wait row is ignored", ovsdb.WaitConditionEqual, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := &vswitch.OpenvSwitch{NextCfg: tt.nextCfg}
			err := wait(tt.until, row, &row.NextCfg)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want error %q", err, tt.wantErr)
			}
		})
	}
	t.Run("failed wait aborts the transaction", func(t *testing.T) {
		row := &vswitch.OpenvSwitch{NextCfg: 9}
		ops := Must[[]ovsdb.Operation](t)(c.Where(ovs).Wait(ovsdb.WaitConditionEqual, &zero, row, &row.NextCfg))
		ops = append(ops, BumpNextCfg(t, c)...)
		if _, err := TransactOps(opContext(t), c, ops...); err == nil {
			t.Fatal("want timed out")
		}
		if got := Must[*vswitch.OpenvSwitch](t)(OpenvSwitchRow(c)).NextCfg; got != 1 {
			t.Fatalf("next_cfg %d after aborted transaction, want 1", got)
		}
	})
}

func TestInMemoryMutate(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	seedBridge(t, c)
	br := &vswitch.Bridge{Name: "br0"}
	mutate := func(t *testing.T, field any, mutator ovsdb.Mutator, value any) *vswitch.Bridge {
		t.Helper()
		ops := Must[[]ovsdb.Operation](t)(c.Where(br).Mutate(br, model.Mutation{Field: field, Mutator: mutator, Value: value}))
		MustTransact(t, c, ops...)
		got := &vswitch.Bridge{Name: "br0"}
		if err := c.Get(context.Background(), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Run("map insert adds keys and never overwrites", func(t *testing.T) {
		mutate(t, &br.ExternalIDs, ovsdb.MutateOperationInsert, map[string]string{"a": "1", "b": "2"})
		got := mutate(t, &br.ExternalIDs, ovsdb.MutateOperationInsert, map[string]string{"a": "changed", "c": "3"})
		want := map[string]string{"a": "1", "b": "2", "c": "3"}
		if !equalMaps(got.ExternalIDs, want) {
			t.Fatalf("external_ids %v want %v", got.ExternalIDs, want)
		}
	})
	t.Run("map delete by key-value pair only deletes matching pairs", func(t *testing.T) {
		got := mutate(t, &br.ExternalIDs, ovsdb.MutateOperationDelete, map[string]string{"a": "other", "b": "2"})
		want := map[string]string{"a": "1", "c": "3"}
		if !equalMaps(got.ExternalIDs, want) {
			t.Fatalf("external_ids %v want %v", got.ExternalIDs, want)
		}
	})
	t.Run("map delete by set of keys", func(t *testing.T) {
		got := mutate(t, &br.ExternalIDs, ovsdb.MutateOperationDelete, []string{"a", "missing"})
		want := map[string]string{"c": "3"}
		if !equalMaps(got.ExternalIDs, want) {
			t.Fatalf("external_ids %v want %v", got.ExternalIDs, want)
		}
	})
	t.Run("set insert and delete", func(t *testing.T) {
		mutate(t, &br.FloodVLANs, ovsdb.MutateOperationInsert, []int{10, 20, 30})
		got := mutate(t, &br.FloodVLANs, ovsdb.MutateOperationDelete, []int{20, 99})
		if len(got.FloodVLANs) != 2 || !containsAll(got.FloodVLANs, 10, 30) {
			t.Fatalf("flood_vlans %v want [10 30]", got.FloodVLANs)
		}
	})
}

func TestInMemorySelect(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	seedBridge(t, c)
	sel := func(columns ...string) ovsdb.Row {
		t.Helper()
		op := ovsdb.Operation{
			Op: ovsdb.OperationSelect, Table: vswitch.InterfaceTable,
			Where:   []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "p0"}},
			Columns: columns,
		}
		res := MustTransact(t, c, op)
		if len(res[0].Rows) != 1 {
			t.Fatalf("select returned %d rows, want 1", len(res[0].Rows))
		}
		return res[0].Rows[0]
	}
	t.Run("returns matching rows", func(t *testing.T) {
		if row := sel(); row["name"] != "p0" {
			t.Fatalf("row %v", row)
		}
	})
	// Quirk: the columns list is ignored (every column is returned) and
	// columns holding their default value are left out of the row. Real
	// ovsdb-server returns exactly the requested columns.
	t.Run("columns list ignored", func(t *testing.T) {
		if row := sel("type"); row["name"] != "p0" {
			t.Fatalf("select honoured columns; update the package documentation: %v", row)
		}
	})
	t.Run("default-valued columns omitted", func(t *testing.T) {
		if row := sel("name", "type"); row["type"] != nil {
			t.Fatalf("select returned default column; update the package documentation: %v", row)
		}
	})
}

func TestInMemoryGarbageCollection(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	seedBridge(t, c)
	count := func(table string) int {
		res := MustTransact(t, c, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table})
		return len(res[0].Rows)
	}
	t.Run("unreferenced insert is dropped", func(t *testing.T) {
		before := count(vswitch.InterfaceTable)
		MustTransact(t, c, Must[[]ovsdb.Operation](t)(c.Create(&vswitch.Interface{UUID: "orphan", Name: "orphan"}))...)
		if got := count(vswitch.InterfaceTable); got != before {
			t.Fatalf("%d interfaces, want %d", got, before)
		}
	})
	t.Run("removing a port from its bridge deletes port and interface", func(t *testing.T) {
		MustTransact(t, c, DelPortOps(t, c, "br0", "p0")...)
		if _, err := InterfaceByName(c, "p0"); err == nil {
			t.Fatal("interface p0 still exists")
		}
		if got := count(vswitch.PortTable); got != 1 { // br0's local port
			t.Fatalf("%d ports, want 1", got)
		}
	})
	t.Run("removing the bridge from Open_vSwitch deletes it", func(t *testing.T) {
		ovs := Must[*vswitch.OpenvSwitch](t)(OpenvSwitchRow(c))
		ops := Must[[]ovsdb.Operation](t)(c.Where(ovs).Mutate(ovs, model.Mutation{Field: &ovs.Bridges, Mutator: ovsdb.MutateOperationDelete, Value: ovs.Bridges}))
		MustTransact(t, c, ops...)
		for _, table := range []string{vswitch.BridgeTable, vswitch.PortTable, vswitch.InterfaceTable} {
			if got := count(table); got != 0 {
				t.Errorf("%d rows left in %s", got, table)
			}
		}
	})
}

func TestInMemoryIntegrity(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	seedBridge(t, c)
	p0 := &vswitch.Interface{Name: "p0"}
	if err := c.Get(context.Background(), p0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		ops     func(t *testing.T) []ovsdb.Operation
		wantErr string // "" means the in-memory server accepts it
	}{
		{"strong reference to missing row", func(t *testing.T) []ovsdb.Operation {
			port := &vswitch.Port{UUID: "p", Name: "dangling", Interfaces: []string{"00000000-0000-0000-0000-000000000001"}}
			br := &vswitch.Bridge{Name: "br0"}
			ops := Must[[]ovsdb.Operation](t)(c.Create(port))
			return append(ops, Must[[]ovsdb.Operation](t)(c.Where(br).Mutate(br, model.Mutation{Field: &br.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{"p"}}))...)
		}, "referential integrity violation"},
		{"deleting a still-referenced row", func(t *testing.T) []ovsdb.Operation {
			return Must[[]ovsdb.Operation](t)(c.Where(p0).Delete())
		}, "referential integrity violation"},
		{"duplicate bridge name", func(t *testing.T) []ovsdb.Operation {
			ovs := Must[*vswitch.OpenvSwitch](t)(OpenvSwitchRow(c))
			ops := Must[[]ovsdb.Operation](t)(c.Create(&vswitch.Bridge{UUID: "dup", Name: "br0"}))
			return append(ops, Must[[]ovsdb.Operation](t)(c.Where(ovs).Mutate(ovs, model.Mutation{Field: &ovs.Bridges, Mutator: ovsdb.MutateOperationInsert, Value: []string{"dup"}}))...)
		}, `constraint violation: operation would cause rows in the "Bridge" table`},
		{"duplicate port name", func(t *testing.T) []ovsdb.Operation {
			iface := &vswitch.Interface{UUID: "i", Name: "other"}
			port := &vswitch.Port{UUID: "p", Name: "p0", Interfaces: []string{"i"}}
			br := &vswitch.Bridge{Name: "br0"}
			ops := Must[[]ovsdb.Operation](t)(c.Create(iface))
			ops = append(ops, Must[[]ovsdb.Operation](t)(c.Create(port))...)
			return append(ops, Must[[]ovsdb.Operation](t)(c.Where(br).Mutate(br, model.Mutation{Field: &br.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{"p"}}))...)
		}, "constraint violation"},
		{"duplicate interface name", func(t *testing.T) []ovsdb.Operation {
			iface := &vswitch.Interface{UUID: "i", Name: "p0"}
			port := &vswitch.Port{UUID: "p", Name: "other", Interfaces: []string{"i"}}
			br := &vswitch.Bridge{Name: "br0"}
			ops := Must[[]ovsdb.Operation](t)(c.Create(iface))
			ops = append(ops, Must[[]ovsdb.Operation](t)(c.Create(port))...)
			return append(ops, Must[[]ovsdb.Operation](t)(c.Where(br).Mutate(br, model.Mutation{Field: &br.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{"p"}}))...)
		}, `"Interface" table to have identical values (p0)`},
		{"duplicate names inside one transaction", func(t *testing.T) []ovsdb.Operation {
			ovs := Must[*vswitch.OpenvSwitch](t)(OpenvSwitchRow(c))
			ops := Must[[]ovsdb.Operation](t)(c.Create(&vswitch.Bridge{UUID: "d1", Name: "brdup"}, &vswitch.Bridge{UUID: "d2", Name: "brdup"}))
			return append(ops, Must[[]ovsdb.Operation](t)(c.Where(ovs).Mutate(ovs, model.Mutation{Field: &ovs.Bridges, Mutator: ovsdb.MutateOperationInsert, Value: []string{"d1", "d2"}}))...)
		}, "constraint violation"},
		// Quirks: column constraints of the schema are not enforced (real
		// ovsdb-server answers "constraint violation" to all of these).
		{"ofport_request out of range", func(t *testing.T) []ovsdb.Operation {
			v := &vswitch.Interface{OfportRequest: new(70000)}
			return Must[[]ovsdb.Operation](t)(c.Where(&vswitch.Interface{Name: "p0"}).Update(v, &v.OfportRequest))
		}, ""},
		{"enum value outside the schema", func(t *testing.T) []ovsdb.Operation {
			return []ovsdb.Operation{{Op: ovsdb.OperationUpdate, Table: vswitch.BridgeTable,
				Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "br0"}},
				Row:   ovsdb.Row{"fail_mode": "bogus"}}}
		}, ""},
		// libovsdb's client validates operations against the schema before
		// sending them, so unknown columns never reach a server (the
		// in-memory server would silently ignore them).
		{"unknown column (client-side)", func(t *testing.T) []ovsdb.Operation {
			return []ovsdb.Operation{{Op: ovsdb.OperationUpdate, Table: vswitch.BridgeTable,
				Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "br0"}},
				Row:   ovsdb.Row{"no_such_column": "x"}}}
		}, "validation failed"},
		// Quirk: operations without a table ("comment" as ovs-vsctl sends,
		// "commit", "abort", "assert") fail the whole transaction: the
		// server's named-UUID expansion looks every operation's table up.
		{"comment operation", func(t *testing.T) []ovsdb.Operation {
			return []ovsdb.Operation{{Op: ovsdb.OperationComment, Comment: new("ovsplane: test")}}
		}, "not found in schema"},
		// Runs last: it leaves p0 without interfaces (and GC deletes them).
		{"port without interfaces (min 1)", func(t *testing.T) []ovsdb.Operation {
			p := &vswitch.Port{Interfaces: []string{}}
			return Must[[]ovsdb.Operation](t)(c.Where(&vswitch.Port{Name: "p0"}).Update(p, &p.Interfaces))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := tt.ops(t)
			res, err := TransactOps(opContext(t), c, ops...)
			t.Logf("result: %v", err)
			if err == nil && ops[0].Op == ovsdb.OperationUpdate && res[0].Count != 1 {
				t.Fatalf("update matched %d rows, want 1", res[0].Count)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("in-memory server rejected it: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestInMemoryServerDB(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       []Option
		leaderOnly bool
		wantErr    string
	}{
		{"leader-only with _Server", nil, true, ""},
		{"leader-only without _Server", []Option{WithoutServerDB()}, true, "target database _Server not found"},
		{"not leader-only without _Server", []Option{WithoutServerDB()}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, tt.opts...)
			c, err := Dial(opContext(t), s.Endpoint(), client.WithLeaderOnly(tt.leaderOnly))
			if err == nil {
				c.Close()
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestInMemoryMonitorUpdates(t *testing.T) {
	t.Parallel()
	s := Start(t)
	watcher := s.Client(t)
	writer := s.Client(t)
	MustTransact(t, writer, CreateBridgeOps(t, writer, BridgeSpec{Name: "br0"})...)
	WaitFor(t, "watcher sees br0", func() error {
		return watcher.Get(context.Background(), &vswitch.Bridge{Name: "br0"})
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func containsAll(have []int, want ...int) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	t.Run("close removes the private directory and refuses serve", func(t *testing.T) {
		s, err := New(opContext(t), Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Dir(s.Sock())); !os.IsNotExist(err) {
			t.Fatalf("socket directory still there: %v", err)
		}
		if err := s.Serve(opContext(t)); !errors.Is(err, ErrClosed) {
			t.Fatalf("serve after close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
	})
	t.Run("socket path too long", func(t *testing.T) {
		_, err := New(opContext(t), Config{Dir: "/tmp/" + strings.Repeat("x", 110)})
		if err == nil || !strings.Contains(err.Error(), "longer than 107 bytes") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("without init there is no Open_vSwitch row", func(t *testing.T) {
		c := Start(t, WithoutInit()).Client(t)
		if _, err := OpenvSwitchRow(c); err == nil {
			t.Fatal("Open_vSwitch row exists")
		}
	})
}

// TestClientDisconnectState pins how a libovsdb client without reconnect
// reports a connection the server dropped: CurrentEndpoint becomes empty,
// but Connected keeps returning true.
func TestClientDisconnectState(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client(t)
	s.Stop()
	WaitFor(t, "CurrentEndpoint empty after the server dropped the client", func() error {
		if ep := c.CurrentEndpoint(); ep != "" {
			return errors.New("still on " + ep)
		}
		return nil
	})
	if !c.Connected() {
		t.Fatal("Connected() turned false; update the package documentation and alive()")
	}
	if _, err := c.Transact(opContext(t), ovsdb.Operation{Op: ovsdb.OperationSelect, Table: vswitch.BridgeTable}); !errors.Is(err, client.ErrNotConnected) {
		t.Fatalf("transact after disconnect: %v", err)
	}
}
