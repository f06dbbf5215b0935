package ovsdbtest

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch/schema"
)

// Snapshot is every row of every table of an Open_vSwitch database: table name → rows, each
// row in OVSDB's JSON notation with its keys sorted, the elements of its sets and maps sorted
// and _version left out, the rows of a table sorted. Two snapshots are equal exactly when the
// databases hold the same data (row UUIDs included), whatever order the server sent it in.
type Snapshot map[string][]string

// Dump reads a Snapshot of the database at endpoint ("unix:PATH" or "tcp:HOST:PORT") in one
// transaction of select operations, one per table of the pinned vswitch schema. It fails on
// any connection, protocol or operation error; it changes nothing.
func Dump(endpoint string) (Snapshot, error) {
	var sch struct {
		Tables map[string]json.RawMessage `json:"tables"`
	}
	if err := json.Unmarshal(schema.JSON(), &sch); err != nil {
		return nil, fmt.Errorf("dump: the vswitch schema: %w", err)
	}
	tables := make([]string, 0, len(sch.Tables))
	for name := range sch.Tables {
		tables = append(tables, name)
	}
	sort.Strings(tables)
	ops := make([]any, len(tables))
	for i, tbl := range tables {
		ops[i] = map[string]any{"op": "select", "table": tbl, "where": []any{}}
	}
	var results []struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := Transact(endpoint, ops, &results); err != nil {
		return nil, fmt.Errorf("dump %s: %w", endpoint, err)
	}
	if len(results) != len(tables) {
		return nil, fmt.Errorf("dump %s: %d results for %d tables", endpoint, len(results), len(tables))
	}
	snap := Snapshot{}
	for i, r := range results {
		for _, row := range r.Rows {
			delete(row, "_version")
			canon := make(map[string]any, len(row))
			for col, raw := range row {
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					return nil, fmt.Errorf("dump %s: %s.%s: %w", endpoint, tables[i], col, err)
				}
				canon[col] = canonicalDatum(v)
			}
			b, err := json.Marshal(canon) // encoding/json sorts map keys
			if err != nil {
				return nil, fmt.Errorf("dump %s: %s: %w", endpoint, tables[i], err)
			}
			snap[tables[i]] = append(snap[tables[i]], string(b))
		}
		sort.Strings(snap[tables[i]])
	}
	return snap, nil
}

// canonicalDatum sorts the elements of an OVSDB set or map, which servers send in any order.
func canonicalDatum(v any) any {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return v
	}
	kind, _ := a[0].(string)
	elems, ok := a[1].([]any)
	if (kind != "set" && kind != "map") || !ok {
		return v
	}
	keyed := make([]string, len(elems))
	for i, e := range elems {
		b, _ := json.Marshal(e) // decoded JSON: cannot fail
		keyed[i] = string(b)
	}
	sort.Strings(keyed)
	out := make([]any, len(keyed))
	for i, k := range keyed {
		out[i] = json.RawMessage(k)
	}
	return []any{kind, out}
}

// Diff lists the rows only one of s and other holds, one line each: "- TABLE ROW" for a row
// of s alone, "+ TABLE ROW" for a row of other alone, in no particular order. It is empty
// exactly when the snapshots are equal.
func (s Snapshot) Diff(other Snapshot) string {
	tables := map[string]bool{}
	for t := range s {
		tables[t] = true
	}
	for t := range other {
		tables[t] = true
	}
	var out strings.Builder
	for tbl := range tables {
		count := map[string]int{}
		for _, r := range s[tbl] {
			count[r]--
		}
		for _, r := range other[tbl] {
			count[r]++
		}
		for r, n := range count {
			switch {
			case n < 0:
				fmt.Fprintf(&out, "- %s %s\n", tbl, r)
			case n > 0:
				fmt.Fprintf(&out, "+ %s %s\n", tbl, r)
			}
		}
	}
	return out.String()
}

// Transact sends one transaction of ops to the Open_vSwitch database at endpoint ("unix:PATH"
// or "tcp:HOST:PORT") over a connection of its own, bounded to 30 s, and decodes the result
// array into results when it is not nil. A JSON-RPC error or an operation's error fails it
// (the transaction was then not committed).
func Transact(endpoint string, ops []any, results any) error {
	network, addr := "unix", strings.TrimPrefix(endpoint, "unix:")
	if rest, ok := strings.CutPrefix(endpoint, "tcp:"); ok {
		network, addr = "tcp", rest
	}
	conn, err := net.DialTimeout(network, addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	params := append([]any{"Open_vSwitch"}, ops...)
	if err := json.NewEncoder(conn).Encode(map[string]any{"method": "transact", "params": params, "id": 1}); err != nil {
		return err
	}
	dec := json.NewDecoder(conn)
	for {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			return err
		}
		if string(msg.ID) != "1" { // an echo request or a notification: not ours
			continue
		}
		if len(msg.Error) > 0 && string(msg.Error) != "null" {
			return fmt.Errorf("transact: %s", msg.Error)
		}
		var outcomes []map[string]any
		if err := json.Unmarshal(msg.Result, &outcomes); err != nil {
			return fmt.Errorf("transact: the result: %w", err)
		}
		for i, r := range outcomes {
			if e, ok := r["error"]; ok && e != nil {
				return fmt.Errorf("transact: operation %d: %v: %v", i, e, r["details"])
			}
		}
		if results == nil {
			return nil
		}
		return json.Unmarshal(msg.Result, results)
	}
}

// MustDump is Dump for tests: it fails tb on an error.
func MustDump(tb testing.TB, endpoint string) Snapshot {
	tb.Helper()
	s, err := Dump(endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
