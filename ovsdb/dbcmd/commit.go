package dbcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// Status is the outcome of Commit, named as OVS's IDL names them.
type Status int

const (
	// Unchanged: there was nothing to write; nothing was sent.
	Unchanged Status = iota
	// Success: the transaction committed.
	Success
	// TryAgain: a verified value changed on the server; run the commands again on a fresh DB.
	TryAgain
	// Error: the server refused the transaction; Result.Error says why.
	Error
)

// CommitOptions control Commit.
type CommitOptions struct {
	// Comment is recorded in the database log with the transaction.
	Comment string
	// DryRun asks the server to check the transaction and then abort it.
	DryRun bool
	// IncrementNextCfg is the Open_vSwitch row whose next_cfg the transaction increments (for
	// waiting on ovs-vswitchd); nil for none.
	IncrementNextCfg *Row
}

// Result is what Commit did.
type Result struct {
	Status Status
	// Error is the server's error, as the JSON object it sent with keys sorted (Status Error).
	Error string
	// NextCfg is the new value of next_cfg (with IncrementNextCfg, on Success).
	NextCfg int64
	// UUIDs maps the temporary UUIDs of inserted rows to the UUIDs the server gave them.
	UUIDs map[string]string
}

// HasChanges reports whether the view holds changes that Commit would send.
func (db *DB) HasChanges() bool {
	ops, _ := db.changeOps()
	return len(ops) > 0
}

// Commit sends every change as one transaction, preceded by the waits recorded by Verify and
// VerifyAbsent. It returns Unchanged without contacting the server when nothing changed. The
// DB must not be used after Commit. A transaction holding a string that is not valid UTF-8 is
// never committed: it ends as ovsdb-server ends it for ovs-vsctl (see refuseInvalidUTF8).
func (db *DB) Commit(ctx context.Context, opts CommitOptions) (*Result, error) {
	ops, inserts := db.changeOps()
	if len(ops) == 0 {
		return &Result{Status: Unchanged}, nil
	}
	waits := append(append([]any{}, db.waits...), db.absentWaits()...)
	all := append(waits, ops...)
	incIndex := -1
	if r := opts.IncrementNextCfg; r != nil {
		where := []any{[]any{"_uuid", "==", encodeAtom(datum.Atom{Type: datum.TypeUUID, Str: r.uuid}, db.names)}}
		all = append(all, map[string]any{
			"op": "mutate", "table": r.t.schema.Name, "where": where,
			"mutations": []any{[]any{"next_cfg", "+=", 1}},
		})
		incIndex = len(all)
		all = append(all, map[string]any{"op": "select", "table": r.t.schema.Name, "where": where, "columns": []string{"next_cfg"}})
	}
	commentIndex := -1
	if opts.Comment != "" && !db.conn.noServerDB {
		commentIndex = len(all)
		all = append(all, map[string]any{"op": "comment", "comment": opts.Comment})
	}
	if opts.DryRun {
		all = append(all, map[string]any{"op": "abort"})
	}
	if i, bad := firstInvalidUTF8(all); i >= 0 {
		return db.refuseInvalidUTF8(ctx, all[:i], bad)
	}
	res, err := db.conn.Transact(ctx, all)
	if err == nil && commentIndex >= 0 && commentRefused(res) {
		// Some servers (libovsdb's, which ovsplaned embeds) do not know the "comment"
		// operation; the transaction failed as a whole, so send it again without the comment.
		all = append(all[:commentIndex:commentIndex], all[commentIndex+1:]...)
		res, err = db.conn.Transact(ctx, all)
	}
	if out, err := failed(res, err); out != nil || err != nil {
		return out, err
	}
	out := &Result{Status: Success, UUIDs: map[string]string{}}
	for i, temp := range inserts {
		if len(waits)+i >= len(res) {
			break
		}
		var ins struct {
			UUID []string `json:"uuid"`
		}
		if json.Unmarshal(res[len(waits)+i], &ins) == nil && len(ins.UUID) == 2 {
			out.UUIDs[temp] = ins.UUID[1]
		}
	}
	if incIndex >= 0 && incIndex < len(res) {
		var sel struct {
			Rows []struct {
				NextCfg int64 `json:"next_cfg"`
			} `json:"rows"`
		}
		if json.Unmarshal(res[incIndex], &sel) == nil && len(sel.Rows) == 1 {
			out.NextCfg = sel.Rows[0].NextCfg
		}
	}
	return out, nil
}

// failed turns a transaction's reply (res, or the error of the call) into the Result of a
// transaction that did not commit: Error with the server's first hard error, TryAgain for a
// failed wait or a canceled transaction. It returns nil, nil when every operation succeeded (an
// "aborted" error, the answer to an abort operation, counts as success), and nil and err for a
// failure of the call itself.
func failed(res []json.RawMessage, err error) (*Result, error) {
	if err != nil {
		if rerr, ok := err.(*RPCError); ok {
			if rerr.JSON == `"canceled"` {
				return &Result{Status: TryAgain}, nil
			}
			return &Result{Status: Error, Error: rerr.JSON}, nil
		}
		return nil, err
	}
	soft := false
	for _, raw := range res {
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			soft = true
			continue
		}
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil {
			return setError(raw), nil
		}
		e, has := obj["error"]
		if !has {
			continue
		}
		s, isStr := e.(string)
		switch {
		case isStr && s == "timed out":
			soft = true
		case isStr && s == "aborted":
		default:
			return setError(raw), nil
		}
	}
	if soft {
		return &Result{Status: TryAgain}, nil
	}
	return nil, nil
}

// firstInvalidUTF8 returns the index of the first operation of ops holding a string that is not
// valid UTF-8 (RFC 3629, as ovsdb-server checks it) and that string's first invalid sequence as
// datum.InvalidUTF8 writes it; -1 and "" when every string is valid. Comment operations are not
// looked at: ovsdb-server does not check a comment's encoding.
//
// Two limits, neither reachable from vsctl's commands: ovsdb-server checks a column's enum
// before the encoding (vsctl's value parser, cli, refuses a value outside the enum before a
// transaction is built, with the same enum-first order), and within one operation it reads the
// row's columns in its own hash order, so when several columns hold invalid strings the one it
// names may differ from the first in key order named here.
func firstInvalidUTF8(ops []any) (int, string) {
	for i, op := range ops {
		if m, ok := op.(map[string]any); ok && m["op"] == "comment" {
			continue
		}
		if bad := invalidUTF8In(reflect.ValueOf(op)); bad != "" {
			return i, bad
		}
	}
	return -1, ""
}

// invalidUTF8In returns the first invalid sequence (datum.InvalidUTF8) of the first invalid
// string found in v, walking slices, maps (keys in sorted order, as encoding/json writes them,
// then values), pointers, interfaces and struct fields; "" when there is none.
func invalidUTF8In(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return datum.InvalidUTF8(v.String())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return invalidUTF8In(v.Elem())
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if bad := invalidUTF8In(v.Index(i)); bad != "" {
				return bad
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			if bad := invalidUTF8In(k); bad != "" {
				return bad
			}
			if bad := invalidUTF8In(v.MapIndex(k)); bad != "" {
				return bad
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if bad := invalidUTF8In(v.Field(i)); bad != "" {
					return bad
				}
			}
		}
	}
	return ""
}

// refuseInvalidUTF8 answers a transaction whose operation after prefix holds a string that is
// not valid UTF-8 (bad is its first invalid sequence, as datum.InvalidUTF8 writes it) the way
// ovsdb-server answers ovs-vsctl, which sends such bytes as they are: encoding/json would
// replace them with U+FFFD and the server would store that instead. The server executes the
// operations in order and refuses the first that holds such a string, so prefix is sent first,
// followed by an abort: when one of its operations fails, that failure is the result, as it
// would be; otherwise the result is the server's refusal of the next operation, Status Error
// with Error {"details":"not a valid UTF-8 string: invalid UTF-8 sequence 0x..","error":
// "constraint violation"}. Nothing is committed either way.
func (db *DB) refuseInvalidUTF8(ctx context.Context, prefix []any, bad string) (*Result, error) {
	if len(prefix) > 0 {
		probe := append(prefix[:len(prefix):len(prefix)], map[string]any{"op": "abort"})
		if out, err := failed(db.conn.Transact(ctx, probe)); out != nil || err != nil {
			return out, err
		}
	}
	details, err := json.Marshal("not a valid UTF-8 string: invalid UTF-8 sequence" + bad)
	if err != nil {
		return nil, err
	}
	return &Result{Status: Error, Error: `{"details":` + string(details) + `,"error":"constraint violation"}`}, nil
}

// commentRefused reports whether a server that does not know the "comment" operation
// refused the transaction because of it (libovsdb's server reports the table "" as unknown).
func commentRefused(res []json.RawMessage) bool {
	for _, raw := range res {
		var obj struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &obj) == nil && obj.Error == `table "" not found in schema "Open_vSwitch"` {
			return true
		}
	}
	return false
}

// setError records the first hard error as OVS prints it: compact JSON, keys sorted.
func setError(raw json.RawMessage) *Result {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return &Result{Status: Error, Error: string(raw)}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return &Result{Status: Error, Error: string(bytes.TrimRight(b.Bytes(), "\n"))}
}

func (db *DB) names(uuid string) (string, bool) {
	n, ok := db.temp[uuid]
	return n, ok
}

// changeOps builds the insert, update, mutate and delete operations for every change, inserts
// first (in insertion order); it also returns the temporary UUIDs of the inserts, in op order.
func (db *DB) changeOps() ([]any, []string) {
	var inserts, others []any
	var temps []string
	for _, r := range db.touched {
		name := r.t.schema.Name
		switch {
		case r.inserted && r.deleted:
			delete(db.temp, r.uuid) // never sent; references to it would fail on the server
		case r.inserted:
			row := map[string]any{}
			for col, st := range r.cols {
				if col == "_uuid" || col == "_version" {
					continue
				}
				cs := r.t.schema.Columns[col]
				if st.cur.Equal(datum.DefaultDatum(cs.Type)) {
					continue
				}
				row[col] = encodeDatum(cs.Type, st.cur, db.names)
			}
			op := map[string]any{"op": "insert", "table": name, "uuid-name": db.temp[r.uuid], "row": row}
			if r.persist {
				op["uuid"] = r.uuid
			}
			inserts = append(inserts, op)
			temps = append(temps, r.uuid)
		case r.deleted && !r.t.schema.IsRoot:
			// Left to ovsdb-server's garbage collection, as OVS's IDL does.
		case r.deleted:
			others = append(others, map[string]any{"op": "delete", "table": name, "where": whereUUID(r.uuid)})
		default:
			update, mutations := db.rowChanges(r)
			if len(update) > 0 {
				others = append(others, map[string]any{"op": "update", "table": name, "where": whereUUID(r.uuid), "row": update})
			}
			if len(mutations) > 0 {
				others = append(others, map[string]any{"op": "mutate", "table": name, "where": whereUUID(r.uuid), "mutations": mutations})
			}
		}
	}
	return append(inserts, others...), temps
}

func whereUUID(uuid string) []any {
	return []any{[]any{"_uuid", "==", []any{"uuid", uuid}}}
}

// rowChanges returns the whole-value updates and the mutations that turn the server's row r
// into this invocation's. Scalars and bounded sets are written whole; unbounded sets and maps
// by mutation (sets: insert before delete, so a set that must not be empty never is; maps:
// delete the keys that go or change, then insert the new pairs).
func (db *DB) rowChanges(r *Row) (map[string]any, []any) {
	update := map[string]any{}
	var mutations []any
	cols := make([]string, 0, len(r.cols))
	for c, st := range r.cols {
		if st.dirty {
			cols = append(cols, c)
		}
	}
	sort.Strings(cols)
	for _, col := range cols {
		st := r.cols[col]
		cs := r.t.schema.Columns[col]
		ct := cs.Type
		isMap := ct.IsMap()
		switch {
		case st.whole && !st.loaded:
			update[col] = encodeDatum(ct, st.cur, db.names)
		case st.loaded:
			if st.cur.Equal(st.orig) {
				continue
			}
			if ct.Max != datum.MaxUnlimited || (isMap && ct.Min > 0) {
				update[col] = encodeDatum(ct, st.cur, db.names)
				continue
			}
			added := datum.Subtract(st.cur, st.orig, isMap)
			if isMap {
				gone := datum.Subtract(st.orig, st.cur, isMap)
				if len(gone.Keys) > 0 {
					mutations = append(mutations, []any{col, "delete", encodeDatum(setOf(ct), datum.Datum{Keys: gone.Keys}, db.names)})
				}
				if len(added.Keys) > 0 {
					mutations = append(mutations, []any{col, "insert", encodeDatum(ct, added, db.names)})
				}
			} else {
				removed := datum.Subtract(st.orig, st.cur, false)
				if len(added.Keys) > 0 {
					mutations = append(mutations, []any{col, "insert", encodeDatum(ct, added, db.names)})
				}
				if len(removed.Keys) > 0 {
					mutations = append(mutations, []any{col, "delete", encodeDatum(ct, removed, db.names)})
				}
			}
		default:
			if isMap {
				if len(st.dels) > 0 {
					mutations = append(mutations, []any{col, "delete", encodeDatum(setOf(ct), datum.NewDatum(st.dels, nil), db.names)})
				}
				if len(st.adds) > 0 {
					mutations = append(mutations, []any{col, "insert", encodeDatum(ct, datum.NewDatum(st.adds, st.addVals), db.names)})
				}
			} else {
				if len(st.adds) > 0 {
					mutations = append(mutations, []any{col, "insert", encodeDatum(ct, datum.NewDatum(st.adds, nil), db.names)})
				}
				if len(st.dels) > 0 {
					mutations = append(mutations, []any{col, "delete", encodeDatum(ct, datum.NewDatum(st.dels, nil), db.names)})
				}
			}
		}
	}
	return update, mutations
}

// setOf is the type of a set of ct's keys.
func setOf(ct datum.ColumnType) datum.ColumnType {
	return datum.ColumnType{Key: ct.Key, Min: 0, Max: datum.MaxUnlimited}
}

// String describes a status as OVS's IDL does.
func (s Status) String() string {
	switch s {
	case Unchanged:
		return "unchanged"
	case Success:
		return "success"
	case TryAgain:
		return "try again"
	case Error:
		return "error"
	}
	return fmt.Sprintf("status(%d)", int(s))
}
