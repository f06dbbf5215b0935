package embedded

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/database"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// Monitors (RFC 7047 4.1.5 and ovsdb-server's monitor_cond and
// monitor_cond_since) are kept here rather than in libovsdb's server, which
// sends updates as JSON-RPC requests and waits for replies that no OVSDB
// client sends (every transaction then hangs), never forgets a monitor
// (monitor_cancel is "not implemented", closed connections keep theirs),
// ignores monitor conditions and refuses the array form of monitor requests
// that ovs-vsctl and OVS's IDL send. Updates are JSON-RPC notifications,
// queued to the connection under the server lock, so a client sees them in
// commit order and before the reply to the transaction that caused them.

// Update formats: "update" (monitor), "update2" (monitor_cond), "update3"
// (monitor_cond_since).
const (
	monitorV1 = iota + 1
	monitorV2
	monitorV3
)

// monitor is one monitor of a connection.
type monitor struct {
	id      json.RawMessage
	version int
	tables  map[string]*monTable
}

// monTable is what a monitor watches in one table.
type monTable struct {
	ts                              *ovsdb.TableSchema
	columns                         []string
	initial, insert, delete, modify bool
	where                           [][]condition // nil: every row; else rows matching any
}

func (mt *monTable) match(r row) bool {
	if mt.where == nil {
		return true
	}
	for _, w := range mt.where {
		if matches(mt.ts, r, w) {
			return true
		}
	}
	return false
}

// parseMonitor parses the requests of a monitor method (params[2]).
func (s *server) parseMonitor(version int, id, raw json.RawMessage) (*monitor, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var reqs map[string]any
	if err := dec.Decode(&reqs); err != nil {
		return nil, fmt.Errorf("monitor requests must be an object")
	}
	m := &monitor{id: id, version: version, tables: map[string]*monTable{}}
	for table, v := range reqs {
		ts := s.store.model.Schema.Table(table)
		if ts == nil {
			return nil, fmt.Errorf("no table named %s", table)
		}
		list, ok := v.([]any)
		if !ok {
			list = []any{v}
		}
		mt := &monTable{ts: ts}
		seen := map[string]bool{}
		everyRow := false
		for _, e := range list {
			req, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("monitor request for %s must be an object", table)
			}
			cols, err := monitorColumns(ts, req["columns"])
			if err != nil {
				return nil, err
			}
			for _, c := range cols {
				if !seen[c] {
					seen[c] = true
					mt.columns = append(mt.columns, c)
				}
			}
			sel, _ := req["select"].(map[string]any)
			flag := func(name string) bool {
				b, ok := sel[name].(bool)
				return !ok || b
			}
			mt.initial = mt.initial || flag("initial")
			mt.insert = mt.insert || flag("insert")
			mt.delete = mt.delete || flag("delete")
			mt.modify = mt.modify || flag("modify")
			if w, ok := req["where"]; ok && version != monitorV1 {
				conds, err := parseWhere(ts, w, nil)
				if err != nil {
					return nil, err
				}
				mt.where = append(mt.where, conds)
			} else {
				everyRow = true
			}
		}
		if everyRow {
			mt.where = nil
		}
		m.tables[table] = mt
	}
	return m, nil
}

// monitorColumns returns the requested columns, every column when absent.
func monitorColumns(ts *ovsdb.TableSchema, raw any) ([]string, error) {
	if raw == nil {
		cols := make([]string, 0, len(ts.Columns))
		for c := range ts.Columns {
			cols = append(cols, c)
		}
		return cols, nil
	}
	return waitColumns(ts, raw)
}

// initial returns the monitor's initial rows, as the reply to its request.
// The caller holds s.mu.
func (s *server) initial(m *monitor) (map[string]any, error) {
	out := map[string]any{}
	for table, mt := range m.tables {
		if !mt.initial {
			continue
		}
		models, err := s.store.Database.List(vswitchDB, table)
		if err != nil {
			return nil, err
		}
		tu := map[string]any{}
		for id, md := range models {
			r, err := rowFromModel(s.store.model, md)
			if err != nil {
				return nil, err
			}
			if !mt.match(r) {
				continue
			}
			if m.version == monitorV1 {
				tu[id] = map[string]any{"new": mt.full(r)}
			} else {
				tu[id] = map[string]any{"initial": mt.nonDefault(r)}
			}
		}
		if len(tu) > 0 {
			out[table] = tu
		}
	}
	return out, nil
}

// full returns every monitored column of r.
func (mt *monTable) full(r row) map[string]any {
	out := make(map[string]any, len(mt.columns))
	for _, c := range mt.columns {
		t, _ := columnType(mt.ts, c)
		out[c] = toJSON(t, r.get(mt.ts, c))
	}
	return out
}

// nonDefault returns the monitored columns of r that do not have their
// default values, as ovsdb-server's update2 "initial" and "insert" do.
func (mt *monTable) nonDefault(r row) map[string]any {
	out := map[string]any{}
	for _, c := range mt.columns {
		t, _ := columnType(mt.ts, c)
		if d := r.get(mt.ts, c); !d.Equal(datum.DefaultDatum(t)) {
			out[c] = toJSON(t, d)
		}
	}
	return out
}

// change is one row changed by a commit; old or new is nil for an insert or
// a delete.
type change struct {
	uuid     string
	old, new row
}

// changes converts a committed update to rows, by table.
func (s *server) changes(update database.Update) (map[string][]change, error) {
	out := map[string][]change{}
	for _, table := range update.GetUpdatedTables() {
		err := update.ForEachModelUpdate(table, func(id string, old, cur model.Model) error {
			ch := change{uuid: id}
			var err error
			if old != nil {
				if ch.old, err = rowFromModel(s.store.model, old); err != nil {
					return err
				}
			}
			if cur != nil {
				if ch.new, err = rowFromModel(s.store.model, cur); err != nil {
					return err
				}
			}
			if ch.old != nil || ch.new != nil {
				out[table] = append(out[table], ch)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("embedded: changes of %s: %w", table, err)
		}
	}
	return out, nil
}

// updates returns the monitor's table updates for changes, nil when it has
// none.
func (m *monitor) updates(changes map[string][]change) map[string]any {
	var out map[string]any
	for table, mt := range m.tables {
		tu := map[string]any{}
		for _, ch := range changes[table] {
			if u := mt.rowUpdate(m.version, ch); u != nil {
				tu[ch.uuid] = u
			}
		}
		if len(tu) > 0 {
			if out == nil {
				out = map[string]any{}
			}
			out[table] = tu
		}
	}
	return out
}

// rowUpdate returns the update of one row for the monitor, nil for none. A
// row that starts (stops) matching the monitor's conditions is reported as
// inserted (deleted), as ovsdb-server does.
func (mt *monTable) rowUpdate(version int, ch change) map[string]any {
	was := ch.old != nil && mt.match(ch.old)
	is := ch.new != nil && mt.match(ch.new)
	switch {
	case !was && is && mt.insert:
		if version == monitorV1 {
			return map[string]any{"new": mt.full(ch.new)}
		}
		return map[string]any{"insert": mt.nonDefault(ch.new)}
	case was && !is && mt.delete:
		if version == monitorV1 {
			return map[string]any{"old": mt.full(ch.old)}
		}
		return map[string]any{"delete": nil}
	case was && is && mt.modify:
		old, diff := map[string]any{}, map[string]any{}
		for _, c := range mt.columns {
			t, _ := columnType(mt.ts, c)
			o, n := ch.old.get(mt.ts, c), ch.new.get(mt.ts, c)
			if o.Equal(n) {
				continue
			}
			old[c] = toJSON(t, o)
			if t.Max == 1 && !t.IsMap() {
				// ovsdb-server sends the new value of a column with at
				// most one element, not the difference.
				diff[c] = toJSON(t, n)
			} else {
				diff[c] = toJSON(t, datum.Diff(o, n, t.IsMap()))
			}
		}
		if len(diff) == 0 {
			return nil
		}
		if version == monitorV1 {
			return map[string]any{"old": old, "new": mt.full(ch.new)}
		}
		return map[string]any{"modify": diff}
	}
	return nil
}
