//go:build linux

package jsonrpc

import (
	"encoding/json"
	"encoding/json/jsontext"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/test/lab"
)

// tu2Sink decodes each table-updates object with libovsdb's types (ReadValue: this test is
// about the protocol, not memory) and keeps what was committed.
type tu2Sink struct {
	mu        sync.Mutex
	committed []libovsdb.TableUpdates2
	initial   []bool
	changed   chan struct{}
}

func (s *tu2Sink) ReadTableUpdates(dec *jsontext.Decoder, initial bool) (Pending, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	var tu libovsdb.TableUpdates2
	if err := json.Unmarshal(v, &tu); err != nil {
		return nil, err
	}
	return &tu2Pending{s: s, tu: tu, initial: initial}, nil
}

type tu2Pending struct {
	s       *tu2Sink
	tu      libovsdb.TableUpdates2
	initial bool
}

func (p *tu2Pending) Commit() error {
	p.s.mu.Lock()
	p.s.committed = append(p.s.committed, p.tu)
	p.s.initial = append(p.s.initial, p.initial)
	p.s.mu.Unlock()
	p.s.changed <- struct{}{}
	return nil
}

func (p *tu2Pending) Discard() {}

func (s *tu2Sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.committed)
}

// get returns the i-th object committed and whether it was initial. It holds the lock: the
// read goroutine's next Commit appends to the slices, and what orders that Commit after this
// read is ovsdb-server answering a change made through another process, which the race
// detector cannot see.
func (s *tu2Sink) get(i int) (libovsdb.TableUpdates2, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed[i], s.initial[i]
}

// TestRealServer runs a Conn against the lab's ovsdb-server: 1,000 ports written in one
// transact, a monitor_cond whose reply must hold exactly them, then update2 diffs for a change
// made by ovs-vsctl and one made on the Conn itself. It logs the member order ovsdb-server
// really writes.
func TestRealServer(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	const ports = 1000

	nc, err := net.Dial("unix", db.Sock)
	if err != nil {
		t.Fatal(err)
	}
	sink := &tu2Sink{changed: make(chan struct{}, 10)}
	c := newConn(nc, Options{Sink: sink})
	var orderMu sync.Mutex
	orders := map[string]bool{}
	c.trace = func(members []string) {
		orderMu.Lock()
		orders[strings.Join(members, ",")] = true
		orderMu.Unlock()
	}
	go c.readLoop()
	t.Cleanup(func() { c.Close() })
	ctx := testCtx(t)

	// One transaction: a bridge with 1,000 ports of one internal interface each.
	ops := []any{"Open_vSwitch"}
	var portRefs []any
	for i := range ports {
		ops = append(ops,
			map[string]any{"op": "insert", "table": "Interface", "uuid-name": fmt.Sprintf("i%d", i),
				"row": map[string]any{"name": fmt.Sprintf("port-%04d", i), "type": "internal"}},
			map[string]any{"op": "insert", "table": "Port", "uuid-name": fmt.Sprintf("p%d", i),
				"row": map[string]any{
					"name":         fmt.Sprintf("port-%04d", i),
					"interfaces":   []any{"named-uuid", fmt.Sprintf("i%d", i)},
					"external_ids": []any{"map", []any{[]any{"owner", "ovsplane"}, []any{"n", fmt.Sprint(i)}}},
				}})
		portRefs = append(portRefs, []any{"named-uuid", fmt.Sprintf("p%d", i)})
	}
	ops = append(ops,
		map[string]any{"op": "insert", "table": "Bridge", "uuid-name": "br",
			"row": map[string]any{"name": "br0", "ports": []any{"set", portRefs}}},
		map[string]any{"op": "mutate", "table": "Open_vSwitch", "where": []any{},
			"mutations": []any{[]any{"bridges", "insert", []any{"set", []any{[]any{"named-uuid", "br"}}}}}})
	var results []libovsdb.OperationResult
	if err := c.Call(ctx, "transact", ops, &results); err != nil {
		t.Fatal(err)
	}
	if len(results) != len(ops)-1 {
		t.Fatalf("%d results for %d operations", len(results), len(ops)-1)
	}
	written := map[string]int{} // port uuid → its number
	for i, r := range results {
		if r.Error != "" {
			t.Fatalf("operation %d: %s: %s", i, r.Error, r.Details)
		}
		if i%2 == 1 && i < 2*ports {
			written[r.UUID.GoUUID] = i / 2
		}
	}
	if len(written) != ports {
		t.Fatalf("%d port uuids", len(written))
	}

	// The monitor's reply holds exactly the rows written.
	requests := map[string]any{
		"Bridge":    []any{map[string]any{"columns": []string{"name", "ports"}}},
		"Port":      []any{map[string]any{"columns": []string{"name", "interfaces", "external_ids"}}},
		"Interface": []any{map[string]any{"columns": []string{"name", "type"}}},
	}
	if err := c.Monitor(ctx, "Open_vSwitch", "m", requests); err != nil {
		t.Fatal(err)
	}
	if n := sink.count(); n != 1 {
		t.Fatalf("%d commits after Monitor, want the initial one", n)
	}
	wait(t, sink.changed)
	init, initial := sink.get(0)
	if !initial {
		t.Fatal("the monitor's reply was not committed as initial")
	}
	if len(init["Port"]) != ports || len(init["Interface"]) != ports || len(init["Bridge"]) != 1 {
		t.Fatalf("reply has %d ports, %d interfaces, %d bridges", len(init["Port"]), len(init["Interface"]), len(init["Bridge"]))
	}
	for uuid, ru := range init["Port"] {
		if ru.Initial == nil {
			t.Fatalf("port %s: not an initial row: %+v", uuid, ru)
		}
		row := *ru.Initial
		i, ok := written[uuid]
		if !ok || row["name"] != fmt.Sprintf("port-%04d", i) {
			t.Fatalf("port %s: name %v, not written so", uuid, row["name"])
		}
		ids, ok := row["external_ids"].(libovsdb.OvsMap)
		if !ok || len(ids.GoMap) != 2 || ids.GoMap["owner"] != "ovsplane" || ids.GoMap["n"] != fmt.Sprint(i) {
			t.Fatalf("port %d: external_ids %#v", i, row["external_ids"])
		}
	}
	var bridgePorts []string
	for _, ru := range init["Bridge"] {
		set, ok := (*ru.Initial)["ports"].(libovsdb.OvsSet)
		if !ok {
			t.Fatalf("bridge ports %#v", (*ru.Initial)["ports"])
		}
		for _, u := range set.GoSet {
			bridgePorts = append(bridgePorts, u.(libovsdb.UUID).GoUUID)
		}
	}
	var writtenUUIDs []string
	for u := range written {
		writtenUUIDs = append(writtenUUIDs, u)
	}
	sort.Strings(bridgePorts)
	sort.Strings(writtenUUIDs)
	if strings.Join(bridgePorts, ",") != strings.Join(writtenUUIDs, ",") {
		t.Fatalf("bridge ports differ from the ports written")
	}

	// A change by another client arrives as an update2 diff.
	db.Vsctl(t, "--no-wait", "set", "Port", "port-0007", "external_ids:x=y")
	wait(t, sink.changed)
	if sink.count() != 2 {
		t.Fatalf("%d commits", sink.count())
	}
	var portUUID string
	for u, i := range written {
		if i == 7 {
			portUUID = u
		}
	}
	up, _ := sink.get(1)
	ru := up["Port"][portUUID]
	if len(up) != 1 || len(up["Port"]) != 1 || ru == nil || ru.Modify == nil {
		t.Fatalf("update2 %+v, want a modify of port-0007 (%s)", up, portUUID)
	}
	if ids, ok := (*ru.Modify)["external_ids"].(libovsdb.OvsMap); !ok || len(ids.GoMap) != 1 || ids.GoMap["x"] != "y" {
		t.Fatalf("modify %#v, want the diff external_ids {x: y}", *ru.Modify)
	}

	// A change on this connection: is its update2 committed before its reply returns?
	del := []any{"Open_vSwitch",
		map[string]any{"op": "mutate", "table": "Bridge", "where": []any{[]any{"name", "==", "br0"}},
			"mutations": []any{[]any{"ports", "delete", []any{"uuid", portUUID}}}}}
	if err := c.Call(ctx, "transact", del, &results); err != nil || results[0].Error != "" {
		t.Fatalf("transact: %v %+v", err, results)
	}
	t.Logf("commits when the transact reply was delivered: %d (3: its update2 came first)", sink.count())
	wait(t, sink.changed)
	up, _ = sink.get(2)
	// "delete": null decodes to a RowUpdate2 with no row at all.
	if ru, ok := up["Port"][portUUID]; !ok || ru != nil && (ru.Insert != nil || ru.Modify != nil || ru.Initial != nil) || len(up["Interface"]) != 1 {
		t.Fatalf("update2 %+v, want port-0007 and its interface deleted", up)
	}
	orderMu.Lock()
	var seen []string
	for o := range orders {
		seen = append(seen, "["+o+"]")
	}
	orderMu.Unlock()
	sort.Strings(seen)
	t.Logf("member orders ovsdb-server wrote: %s", strings.Join(seen, " "))
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}
