package embedded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/ovn-kubernetes/libovsdb/database"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// A transaction runs in two layers. libovsdb's engine executes the
// operations that read or change rows (insert, select, update, mutate,
// delete) and checks the result (references, garbage collection, indexes).
// This file executes the rest as ovsdb-server does (ovsdb/execution.c),
// because the engine gets them wrong: "wait" (the engine compares sets in
// order, skips expected default values, matches every actual row against
// every expected row, and sleeps in a loop while holding the server's only
// transaction lock), "comment" (written to the file's "_comment"),
// "commit" (every transaction is durable here), "abort" and "assert".
//
// A wait sees the transaction's own earlier changes: when write operations
// precede it, the engine runs them in a scratch transaction that is never
// committed, followed by a select of the waited-on table. A wait whose
// condition does not hold fails with "timed out" once its timeout (absent:
// forever) has passed since the transaction arrived; until then the whole
// transaction is retried after every commit, as ovsdb-server's triggers do.

// outcome is the result of one attempt at a transaction.
type outcome struct {
	results  []any
	retry    bool          // a wait failed before its deadline
	deadline time.Time     // zero: none (with retry)
	changed  chan struct{} // closed by the next commit (with retry)
}

// txnOp is one operation of a transact request.
type txnOp struct {
	raw   map[string]any  // decoded with UseNumber
	op    ovsdb.Operation // for the engine
	index int             // in the request
}

func errResult(kind, format string, args ...any) map[string]any {
	r := map[string]any{"error": kind}
	if format != "" {
		r["details"] = fmt.Sprintf(format, args...)
	}
	return r
}

// execute makes one attempt at the operations of a transact request that
// arrived at start, on behalf of c. The caller holds s.mu.
func (s *server) execute(c *conn, params []json.RawMessage, start time.Time) outcome {
	ops := make([]txnOp, len(params))
	out := outcome{results: make([]any, len(params))}
	names := map[string]string{}
	for i, p := range params {
		dec := json.NewDecoder(bytes.NewReader(p))
		dec.UseNumber()
		if err := dec.Decode(&ops[i].raw); err != nil || ops[i].raw == nil {
			return s.failAt(out, ops[:i], i, errResult("syntax error", "operation is not a JSON object"))
		}
		if err := json.Unmarshal(p, &ops[i].op); err != nil {
			ops[i].op = ovsdb.Operation{}
		}
		op := &ops[i].op
		if op.Op == ovsdb.OperationInsert {
			// One UUID for every run of the engine (scratch and final).
			if op.UUID == "" {
				op.UUID = uuid.NewString()
			}
			if op.UUIDName != "" {
				names[op.UUIDName] = op.UUID
			}
		}
	}
	var engine []txnOp
	var comments []string
	views := map[string][]row{}
	for i, o := range ops {
		if details := invalidUTF8(o.raw); details != "" { // see text.go
			return s.failAt(out, engine, i, errResult("constraint violation", "%s", details))
		}
		kind, _ := o.raw["op"].(string)
		switch kind {
		case "wait":
			ok, res, deadline := s.wait(o.raw, names, start, func(table string) ([]row, int, any) {
				key := fmt.Sprint(len(engine), "\x00", table)
				if rows, ok := views[key]; ok {
					return rows, -1, nil
				}
				rows, failed, res := s.view(engine, table)
				if failed < 0 {
					views[key] = rows
				}
				return rows, failed, res
			})
			switch {
			case ok:
				out.results[i] = map[string]any{}
			case res == nil: // not yet: retry after a commit or at the deadline
				out.retry, out.deadline, out.changed = true, deadline, s.changed
				return out
			default:
				return s.failAt(out, engine, i, res)
			}
		case "comment":
			text, ok := o.raw["comment"].(string)
			if !ok {
				return s.failAt(out, engine, i, errResult("syntax error", "comment must be a string"))
			}
			comments = append(comments, text)
			out.results[i] = map[string]any{}
		case "commit":
			if _, ok := o.raw["durable"].(bool); !ok {
				return s.failAt(out, engine, i, errResult("syntax error", "durable must be a boolean"))
			}
			out.results[i] = map[string]any{} // every commit is durable here
		case "abort":
			return s.failAt(out, engine, i, errResult("aborted", "aborted by request"))
		case "assert":
			name, _ := o.raw["lock"].(string)
			if l := s.locks[name]; l == nil || l.owner != c {
				return s.failAt(out, engine, i, errResult("not owner", "Asserted lock %s not held.", name))
			}
			out.results[i] = map[string]any{}
		default:
			o.index = i
			engine = append(engine, o)
		}
	}
	if len(engine) == 0 {
		return out
	}
	results, update := s.run(engine)
	if s.fill(&out, engine, results) {
		return out
	}
	if err := s.commit(update, comments); err != nil {
		out.results = append(out.results, errResult("I/O error", "%v", err))
	}
	return out
}

// run executes the engine operations in a new transaction of libovsdb's
// engine, with extra operations after them; nothing is committed.
func (s *server) run(engine []txnOp, extra ...ovsdb.Operation) ([]*ovsdb.OperationResult, database.Update) {
	ops := make([]ovsdb.Operation, 0, len(engine)+len(extra))
	for _, o := range engine {
		ops = append(ops, o.op)
	}
	ops = append(ops, extra...)
	return s.store.Database.NewTransaction(vswitchDB).Transact(ops...)
}

// fill stores the engine's results at the operations' places in results and
// appends a commit-time error (the engine's extra result). It reports
// whether an operation failed.
func (s *server) fill(out *outcome, engine []txnOp, res []*ovsdb.OperationResult) (failed bool) {
	for j, r := range res {
		if r == nil {
			continue
		}
		if j >= len(engine) {
			out.results = append(out.results, opResult(nil, r, s))
			failed = failed || r.Error != ""
			continue
		}
		out.results[engine[j].index] = opResult(&engine[j].op, r, s)
		if r.Error != "" {
			return true
		}
	}
	return failed
}

// failAt ends a transaction that fails at operation i with res: the
// operations before it report their results (from a scratch run of the
// engine, which may itself fail earlier), those after it null.
func (s *server) failAt(out outcome, engine []txnOp, i int, res any) outcome {
	if len(engine) > 0 {
		results, _ := s.run(engine)
		if s.fill(&out, engine, results) {
			return out
		}
	}
	out.results[i] = res
	return out
}

// view returns the rows of table as the engine operations leave them. If
// one of those operations fails, failed is its index among them and res its
// error result.
func (s *server) view(engine []txnOp, table string) (rows []row, failed int, res any) {
	if len(engine) == 0 {
		models, err := s.store.Database.List(vswitchDB, table)
		if err != nil {
			return nil, -2, errResult("unknown table", "%v", err)
		}
		for _, m := range models {
			r, err := rowFromModel(s.store.model, m)
			if err != nil {
				return nil, -2, errResult("internal error", "%v", err)
			}
			rows = append(rows, r)
		}
		return rows, -1, nil
	}
	results, _ := s.run(engine, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table, Where: []ovsdb.Condition{}})
	for j := range engine {
		if j < len(results) && results[j] != nil && results[j].Error != "" {
			return nil, j, nil
		}
	}
	sel := results[len(engine)]
	if sel == nil || sel.Error != "" {
		return nil, -2, errResult("internal error", "select %s in scratch transaction failed", table)
	}
	ts := s.store.model.Schema.Table(table)
	for _, r := range sel.Rows {
		out := row{}
		for c, v := range r {
			t, ok := columnType(ts, c)
			if !ok {
				continue
			}
			d, err := parseDatum(t, v, nil)
			if err != nil {
				return nil, -2, errResult("internal error", "%s.%s: %v", table, c, err)
			}
			out[c] = d
		}
		rows = append(rows, out)
	}
	return rows, -1, nil
}

// wait evaluates a wait operation (RFC 7047 5.2.6) against the rows view
// returns. ok: the condition holds. Otherwise res is the error result, or
// nil when the caller should retry later (at deadline, if not zero).
func (s *server) wait(raw map[string]any, names map[string]string, start time.Time,
	view func(table string) ([]row, int, any)) (ok bool, res any, deadline time.Time) {
	table, _ := raw["table"].(string)
	ts := s.store.model.Schema.Table(table)
	if ts == nil {
		return false, errResult("unknown table", "No table named %s.", table), time.Time{}
	}
	until, _ := raw["until"].(string)
	if until != "==" && until != "!=" {
		return false, errResult("syntax error", "\"until\" must be \"==\" or \"!=\""), time.Time{}
	}
	where, err := parseWhere(ts, raw["where"], names)
	if err != nil {
		return false, errResult("syntax error", "%v", err), time.Time{}
	}
	columns, err := waitColumns(ts, raw["columns"])
	if err != nil {
		return false, errResult("syntax error", "%v", err), time.Time{}
	}
	expectedRows, okRows := raw["rows"].([]any)
	if !okRows {
		return false, errResult("syntax error", "\"rows\" must be an array of rows"), time.Time{}
	}
	expected := map[string]bool{}
	for _, er := range expectedRows {
		obj, ok := er.(map[string]any)
		if !ok {
			return false, errResult("syntax error", "\"rows\" must be an array of rows"), time.Time{}
		}
		r := row{}
		for c, v := range obj {
			t, ok := columnType(ts, c)
			if !ok {
				return false, errResult("syntax error", "%s is not a valid column name", c), time.Time{}
			}
			d, err := parseDatum(t, v, names)
			if err != nil {
				return false, errResult("syntax error", "column %s: %v", c, err), time.Time{}
			}
			r[c] = d
		}
		expected[projection(ts, r, columns)] = true
	}
	timeout := time.Duration(-1)
	if v, ok := raw["timeout"]; ok {
		n, ok := v.(json.Number)
		ms, err := n.Int64()
		if !ok || err != nil || ms < 0 {
			return false, errResult("syntax error", "\"timeout\" must be a non-negative integer"), time.Time{}
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	rows, failed, res := view(table)
	if failed >= 0 || res != nil {
		if res == nil {
			// An earlier operation failed; the caller reports it.
			return false, errResult("internal error", "earlier operation failed"), time.Time{}
		}
		return false, res, time.Time{}
	}
	actual := map[string]bool{}
	for _, r := range rows {
		if matches(ts, r, where) {
			actual[projection(ts, r, columns)] = true
		}
	}
	equal := len(actual) == len(expected)
	for k := range actual {
		equal = equal && expected[k]
	}
	if equal == (until == "==") {
		return true, nil, time.Time{}
	}
	if timeout < 0 {
		return false, nil, time.Time{}
	}
	if elapsed := time.Since(start); elapsed < timeout {
		return false, nil, start.Add(timeout)
	}
	return false, errResult("timed out", "\"where\" clause test failed"), time.Time{}
}

// waitColumns returns the columns a wait compares: the listed ones, or every
// column and _uuid.
func waitColumns(ts *ovsdb.TableSchema, raw any) ([]string, error) {
	if raw == nil {
		cols := []string{"_uuid"}
		for c := range ts.Columns {
			cols = append(cols, c)
		}
		return cols, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("\"columns\" must be an array of column names")
	}
	cols := make([]string, 0, len(list))
	for _, v := range list {
		c, _ := v.(string)
		if _, ok := columnType(ts, c); !ok {
			return nil, fmt.Errorf("%v is not a valid column name", v)
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// projection is a canonical text of r's values in columns; rows that are
// equal in those columns have the same projection.
func projection(ts *ovsdb.TableSchema, r row, columns []string) string {
	var b bytes.Buffer
	for _, c := range columns {
		t, _ := columnType(ts, c)
		text, _ := json.Marshal(toJSON(t, r.get(ts, c)))
		b.Write(text)
		b.WriteByte(0)
	}
	return b.String()
}

// opResult is the JSON result of one engine operation, as ovsdb-server
// writes it (libovsdb's own encoding writes an empty "uuid" for every
// result and leaves out zero counts and empty row lists).
func opResult(op *ovsdb.Operation, r *ovsdb.OperationResult, s *server) any {
	if r.Error != "" {
		res := map[string]any{"error": r.Error}
		if r.Details != "" {
			res["details"] = r.Details
		}
		return res
	}
	if op == nil {
		return map[string]any{}
	}
	switch op.Op {
	case ovsdb.OperationInsert:
		return map[string]any{"uuid": []any{"uuid", r.UUID.GoUUID}}
	case ovsdb.OperationSelect:
		return map[string]any{"rows": s.project(op.Table, op.Columns, r.Rows)}
	case ovsdb.OperationUpdate, ovsdb.OperationMutate, ovsdb.OperationDelete:
		return map[string]any{"count": r.Count}
	}
	return map[string]any{}
}

// project returns the selected columns of rows (every column and _uuid when
// columns is empty), with the default values the engine leaves out.
func (s *server) project(table string, columns []string, rows []ovsdb.Row) []any {
	ts := s.store.model.Schema.Table(table)
	if len(columns) == 0 {
		columns = []string{"_uuid"}
		for c := range ts.Columns {
			columns = append(columns, c)
		}
	}
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		o := map[string]any{}
		for _, c := range columns {
			if v, ok := r[c]; ok {
				o[c] = v
			} else if t, ok := columnType(ts, c); ok {
				o[c] = toJSON(t, datum.DefaultDatum(t))
			}
		}
		out = append(out, o)
	}
	return out
}
