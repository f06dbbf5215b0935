package dbcmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// DB is one invocation's view of the database (see the package documentation). It is not safe
// for concurrent use.
type DB struct {
	conn   *Conn
	schema *Schema
	tables map[string]*tableCache
	// touched lists rows changed, inserted or deleted, in the order of their first change, so
	// that the transaction is deterministic.
	touched []*Row
	waits   []any
	// absent are the VerifyAbsent checks, turned into waits at commit time.
	absent []absentCheck
	// temp maps the UUIDs given to inserted rows to their named-uuid names.
	temp map[string]string
}

type tableCache struct {
	schema *TableSchema
	rows   map[string]*Row
	// order lists the UUIDs of rows in the order they became known.
	order []string
	// listing is the order of the rows in the server's reply to the last full listing (the
	// server's own iteration order).
	listing []string
	// complete records, per column, that the column is loaded for every row on the server;
	// listed is true once every row of the table is known.
	complete map[string]bool
	listed   bool
}

// Row is one row as this invocation sees it.
type Row struct {
	db       *DB
	t        *tableCache
	uuid     string
	cols     map[string]*colState
	inserted bool
	// persist: the row keeps its UUID on the server (insert with "uuid", OVSDB 2.x+).
	persist bool
	deleted bool
	touched bool
}

type colState struct {
	loaded bool
	orig   datum.Datum // the server's value, when loaded
	cur    datum.Datum // the value as changed by this invocation, when loaded or whole
	dirty  bool
	whole  bool // cur replaces the server's value, which was never read
	// adds and dels are changes to a set or map column that was never read: elements (or map
	// pairs) to insert, elements (or map keys) to delete.
	adds, dels []datum.Atom
	addVals    []datum.Atom
}

// New returns an empty view of the database behind conn, whose schema is schema.
func New(conn *Conn, schema *Schema) *DB {
	return &DB{conn: conn, schema: schema, tables: map[string]*tableCache{}, temp: map[string]string{}}
}

// Schema returns the database schema.
func (db *DB) Schema() *Schema { return db.schema }

// Conn returns the connection the view reads through.
func (db *DB) Conn() *Conn { return db.conn }

func (db *DB) table(name string) (*tableCache, error) {
	if tc, ok := db.tables[name]; ok {
		return tc, nil
	}
	ts, ok := db.schema.Tables[name]
	if !ok {
		return nil, fmt.Errorf("no table named %s in schema %s", name, db.schema.Name)
	}
	tc := &tableCache{schema: ts, rows: map[string]*Row{}, complete: map[string]bool{}}
	db.tables[name] = tc
	return tc, nil
}

func (db *DB) column(tc *tableCache, col string) (*ColumnSchema, error) {
	cs, ok := tc.schema.Columns[col]
	if !ok {
		return nil, fmt.Errorf("table %s has no column %s", tc.schema.Name, col)
	}
	return cs, nil
}

// Cond is one condition of a server-side select.
type Cond struct {
	Column string
	// Op is "==" or "includes" (the only ones DB can also evaluate on rows changed locally).
	Op    string
	Value datum.Datum
}

// Lookup returns the rows of table whose column col equals value, as this invocation sees them
// (rows inserted or changed by earlier commands included, deleted ones excluded), with the
// columns cols loaded as well as col. The rows come in the order they became known.
func (db *DB) Lookup(ctx context.Context, table, col string, value datum.Datum, cols ...string) ([]*Row, error) {
	return db.Select(ctx, table, Cond{Column: col, Op: "==", Value: value}, cols...)
}

// Containing returns the rows of table whose set (or map key) column col contains atom, as
// Lookup does.
func (db *DB) Containing(ctx context.Context, table, col string, atom datum.Atom, cols ...string) ([]*Row, error) {
	return db.Select(ctx, table, Cond{Column: col, Op: "includes", Value: datum.Datum{Keys: []datum.Atom{atom}}}, cols...)
}

// Select returns the rows of table matching c, as Lookup does. Strings are compared as bytes,
// as ovs-vsctl's IDL compares them: a value holding a string that is not valid UTF-8 matches no
// stored row (ovsdb-server stores none, and the select is not sent, since encoding/json would
// turn the bytes into U+FFFD), only rows this invocation set to it.
func (db *DB) Select(ctx context.Context, table string, c Cond, cols ...string) ([]*Row, error) {
	tc, err := db.table(table)
	if err != nil {
		return nil, err
	}
	cs, err := db.column(tc, c.Column)
	if err != nil {
		return nil, err
	}
	if c.Op != "==" && c.Op != "includes" {
		return nil, fmt.Errorf("select on %s.%s: unsupported operator %q", table, c.Column, c.Op)
	}
	want := cols
	if c.Op == "==" {
		want = append([]string{c.Column}, cols...)
	}
	var server map[string]bool
	if !tc.listed || !db.allComplete(tc, append([]string{c.Column}, cols...)) {
		var where []any
		if c.Op == "includes" && cs.Type.IsMap() {
			// A map "includes" needs a map value; look the key up client-side instead.
			want = append([]string{c.Column}, cols...)
		} else {
			where = []any{[]any{c.Column, c.Op, encodeDatum(cs.Type, c.Value, db.namedOnly)}}
		}
		var ids []string
		if where == nil || !datumHasInvalidUTF8(c.Value) {
			if ids, err = db.fetch(ctx, tc, where, want); err != nil {
				return nil, err
			}
		}
		// else: no stored row matches a string that is not valid UTF-8 (ovsdb-server stores
		// none), and encoding/json would send U+FFFD instead, matching rows holding that:
		// only this invocation's rows are looked at, as ovs-vsctl's IDL compares bytes.
		if where != nil {
			server = make(map[string]bool, len(ids))
			for _, id := range ids {
				server[id] = true
			}
		}
	}
	var out []*Row
	for _, id := range tc.order {
		r := tc.rows[id]
		if r == nil || r.deleted {
			continue
		}
		st := r.cols[c.Column]
		known := st != nil && (st.loaded || st.whole)
		switch {
		case known && (server == nil || st.dirty || r.inserted || !server[id]):
			// Known here (and possibly changed here): this invocation's value decides.
			if match(st.cur, c) {
				out = append(out, r)
			}
		case server != nil && server[id]:
			// Matched on the server. The column was never read here, so only pending edits
			// can change that: the match stands unless one of the atoms was removed.
			if st == nil || !st.dirty || st.whole || !containsAny(st.dels, c.Value.Keys) {
				out = append(out, r)
			}
		case st != nil && st.dirty && !known && c.Op == "includes":
			// Not matched on the server (or not asked): pending additions may make it match.
			if containsAll(st.adds, c.Value.Keys) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// datumHasInvalidUTF8 reports whether a string of d (key or value) is not valid UTF-8.
func datumHasInvalidUTF8(d datum.Datum) bool {
	for _, atoms := range [][]datum.Atom{d.Keys, d.Values} {
		for _, a := range atoms {
			if a.Type == datum.TypeString && datum.InvalidUTF8(a.Str) != "" {
				return true
			}
		}
	}
	return false
}

func containsAny(list, atoms []datum.Atom) bool {
	for _, a := range atoms {
		if slices.ContainsFunc(list, func(b datum.Atom) bool { return datum.CompareAtoms(a, b) == 0 }) {
			return true
		}
	}
	return false
}

func containsAll(list, atoms []datum.Atom) bool {
	for _, a := range atoms {
		if !slices.ContainsFunc(list, func(b datum.Atom) bool { return datum.CompareAtoms(a, b) == 0 }) {
			return false
		}
	}
	return len(atoms) > 0
}

func match(v datum.Datum, c Cond) bool {
	if c.Op == "==" {
		return v.Equal(c.Value)
	}
	for _, k := range c.Value.Keys {
		if _, ok := v.Find(k); !ok {
			return false
		}
	}
	return true
}

// namedOnly is the namer for conditions: rows inserted by this invocation are not on the
// server, so their temporary UUIDs are sent as they are and match nothing there.
func (db *DB) namedOnly(string) (string, bool) { return "", false }

func (db *DB) allComplete(tc *tableCache, cols []string) bool {
	for _, c := range cols {
		if !tc.complete[c] {
			return false
		}
	}
	return true
}

// Get returns the row of table with the given UUID, or nil when there is none (or it was
// deleted by this invocation), with the columns cols loaded.
func (db *DB) Get(ctx context.Context, table, uuid string, cols ...string) (*Row, error) {
	tc, err := db.table(table)
	if err != nil {
		return nil, err
	}
	r := tc.rows[uuid]
	if r == nil && !tc.listed {
		if _, err := db.fetch(ctx, tc, []any{[]any{"_uuid", "==", []any{"uuid", uuid}}}, cols); err != nil {
			return nil, err
		}
		r = tc.rows[uuid]
	}
	if r == nil || r.deleted {
		return nil, nil
	}
	if err := r.load(ctx, cols...); err != nil {
		return nil, err
	}
	return r, nil
}

// All returns every row of table as this invocation sees it, with the columns cols loaded
// (every column when cols is empty): the rows in the order the server listed them (the order
// of its monitor reply's JSON object, which OVS's IDL receives too), then rows inserted by
// this invocation.
func (db *DB) All(ctx context.Context, table string, cols ...string) ([]*Row, error) {
	tc, err := db.table(table)
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		cols = tc.schema.ColumnNames()
	}
	if !tc.listed || !db.allComplete(tc, cols) {
		if _, err := db.fetch(ctx, tc, nil, cols); err != nil {
			return nil, err
		}
	}
	var out []*Row
	seen := make(map[string]bool, len(tc.listing))
	for _, id := range tc.listing {
		seen[id] = true
		if r := tc.rows[id]; r != nil && !r.deleted {
			out = append(out, r)
		}
	}
	for _, id := range tc.order {
		if r := tc.rows[id]; r != nil && !r.deleted && !seen[id] {
			out = append(out, r)
		}
	}
	return out, nil
}

// selReply is one select result as decoded from the server's reply.
type selReply struct {
	Rows    []map[string]any `json:"rows"`
	Error   string           `json:"error"`
	Details string           `json:"details"`
	// scanned, when not nil, holds the rows instead of Rows: already decoded by scanRows
	// (listTable's replies).
	scanned []scannedRow
}

// selectColumns returns the columns a fetch of cols asks for: _uuid first, each once.
func (db *DB) selectColumns(tc *tableCache, cols []string) ([]string, error) {
	want := []string{"_uuid"}
	for _, c := range cols {
		if _, err := db.column(tc, c); err != nil {
			return nil, err
		}
		if c != "_uuid" && !slices.Contains(want, c) {
			want = append(want, c)
		}
	}
	return want, nil
}

// query runs one select and decodes its reply; it touches no shared state, so several may
// run at once.
func (db *DB) query(ctx context.Context, table string, where []any, want []string) (*selReply, error) {
	if where == nil {
		where = []any{}
	}
	var res []selReply
	err := db.conn.TransactInto(ctx, []any{map[string]any{
		"op": "select", "table": table, "where": where, "columns": want,
	}}, &res)
	if err != nil {
		return nil, err
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("select on %s: malformed reply", table)
	}
	if res[0].Error != "" {
		return nil, fmt.Errorf("select on %s: %s: %s", table, res[0].Error, res[0].Details)
	}
	return &res[0], nil
}

// listTable lists every row of table with columns want (want[0] is "_uuid") through a
// one-shot "monitor_cond" instead of a select: ovsdb-server builds that reply faster and
// leaves out columns holding their default value. The rows come in the order of the reply's
// JSON object, which is also the order ovs-vsctl's IDL receives them in. The monitor is
// cancelled right away.
func (db *DB) listTable(ctx context.Context, tc *tableCache, want []string) (*selReply, error) {
	table := tc.schema.Name
	if len(want) < 2 {
		return db.query(ctx, table, nil, want)
	}
	db.conn.mu.Lock()
	db.conn.nextID++
	id := fmt.Sprintf("vsctl-list-%d", db.conn.nextID)
	db.conn.mu.Unlock()
	raw, err := db.conn.Call(ctx, "monitor_cond", db.conn.database, id,
		map[string]any{table: map[string]any{"columns": want[1:],
			// Only the initial contents: no updates are wanted, and an explicit select
			// keeps libovsdb's server from crashing on a request without one.
			"select": map[string]bool{"initial": true, "insert": false, "delete": false, "modify": false}}})
	if err != nil {
		return nil, err
	}
	// Wait for the cancellation: a monitor left running would make the server compute
	// updates for this connection on our own commit (and libovsdb's server crashes doing so
	// for such a monitor).
	_, _ = db.conn.Call(ctx, "monitor_cancel", id)
	cols := make([]*ColumnSchema, len(want))
	for i, c := range want {
		cols[i] = tc.schema.Columns[c]
	}
	rows, err := scanRows(raw, table, want, cols)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", table, err)
	}
	if rows == nil {
		rows = []scannedRow{}
	}
	return &selReply{scanned: rows}, nil
}

// fetch selects the rows of tc matching where (every row when where is nil) with columns
// cols, merges them into the cache and returns their UUIDs.
func (db *DB) fetch(ctx context.Context, tc *tableCache, where []any, cols []string) ([]string, error) {
	want, err := db.selectColumns(tc, cols)
	if err != nil {
		return nil, err
	}
	var sel *selReply
	if len(where) == 0 {
		sel, err = db.listTable(ctx, tc, want)
	} else {
		sel, err = db.query(ctx, tc.schema.Name, where, want)
	}
	if err != nil {
		return nil, err
	}
	return db.mergeReply(tc, len(where) == 0, want, sel)
}

// mergeReply merges the rows of a select reply (columns want) into tc; full says the select
// listed the whole table.
func (db *DB) mergeReply(tc *tableCache, full bool, want []string, sel *selReply) ([]string, error) {
	cschemas := make([]*ColumnSchema, len(want))
	for i, c := range want {
		cschemas[i] = tc.schema.Columns[c]
	}
	if sel.scanned != nil {
		return db.mergeScanned(tc, full, want, cschemas, sel.scanned)
	}
	ids := make([]string, 0, len(sel.Rows))
	for _, raw := range sel.Rows {
		u, err := datumFromJSON(uuidType, raw["_uuid"])
		if err != nil || len(u.Keys) != 1 {
			return nil, fmt.Errorf("select on %s: row without _uuid", tc.schema.Name)
		}
		id := u.Keys[0].Str
		r := tc.rows[id]
		if r == nil {
			r = &Row{db: db, t: tc, uuid: id, cols: make(map[string]*colState, len(want))}
			tc.rows[id] = r
			tc.order = append(tc.order, id)
		}
		for i, c := range want[1:] {
			v, ok := raw[c]
			if err := r.mergeValue(cschemas[i+1], v, ok); err != nil {
				return nil, err
			}
		}
		ids = append(ids, id)
	}
	if full {
		tc.listing = ids
		tc.listed = true
		for _, c := range want {
			tc.complete[c] = true
		}
		// Rows known from earlier partial fetches but gone from the full listing were deleted
		// by someone else since; they stay (this invocation works on its first snapshot).
	}
	return ids, nil
}

// mergeScanned is mergeReply for rows decoded by scanRows.
func (db *DB) mergeScanned(tc *tableCache, full bool, want []string, cschemas []*ColumnSchema, rows []scannedRow) ([]string, error) {
	ids := make([]string, 0, len(rows))
	for _, sr := range rows {
		id := sr.uuid
		if r := tc.rows[id]; r != nil {
			for i := 1; i < len(want); i++ {
				r.mergeDatum(cschemas[i], sr.vals[i], sr.have[i])
			}
		} else {
			// A row seen for the first time: its column states in one allocation (a listing
			// of thousands of rows otherwise allocates one per row and column).
			r = &Row{db: db, t: tc, uuid: id, cols: make(map[string]*colState, len(want))}
			states := make([]colState, len(want)-1)
			for i := 1; i < len(want); i++ {
				d := sr.vals[i]
				if !sr.have[i] {
					d = datum.DefaultDatum(cschemas[i].Type)
				}
				states[i-1] = colState{loaded: true, orig: d, cur: d}
				r.cols[cschemas[i].Name] = &states[i-1]
			}
			tc.rows[id] = r
			tc.order = append(tc.order, id)
		}
		ids = append(ids, id)
	}
	if full {
		tc.listing = ids
		tc.listed = true
		for _, c := range want {
			tc.complete[c] = true
		}
	}
	return ids, nil
}

// TableColumns names a table and the columns of it to load.
type TableColumns struct {
	Table   string
	Columns []string
}

// Prefetch lists several tables at once, as All would one after the other, but with the
// selects in flight together and their replies decoded in parallel, so that the server's
// work and the client's overlap. Tables already listed with those columns are skipped.
func (db *DB) Prefetch(ctx context.Context, reqs ...TableColumns) error {
	type job struct {
		tc   *tableCache
		want []string
		sel  *selReply
		err  error
	}
	var jobs []*job
	for _, rq := range reqs {
		tc, err := db.table(rq.Table)
		if err != nil {
			return err
		}
		cols := rq.Columns
		if len(cols) == 0 {
			cols = tc.schema.ColumnNames()
		}
		if tc.listed && db.allComplete(tc, cols) {
			continue
		}
		want, err := db.selectColumns(tc, cols)
		if err != nil {
			return err
		}
		jobs = append(jobs, &job{tc: tc, want: want})
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.sel, j.err = db.listTable(ctx, j.tc, j.want)
		}()
	}
	wg.Wait()
	for _, j := range jobs {
		if j.err != nil {
			return j.err
		}
		if _, err := db.mergeReply(j.tc, true, j.want, j.sel); err != nil {
			return err
		}
	}
	return nil
}

// merge records the server's value of column c (raw JSON; nil for "not sent"), unless this
// invocation already has one.
func (r *Row) merge(c string, raw json.RawMessage) error {
	if raw == nil {
		return r.mergeValue(r.t.schema.Columns[c], nil, false)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s.%s of row %s: %w", r.t.schema.Name, c, r.uuid, err)
	}
	return r.mergeValue(r.t.schema.Columns[c], v, true)
}

// mergeValue records the server's value v (decoded JSON; ok false when the server sent none)
// of column cs, unless this invocation already has one.
func (r *Row) mergeValue(cs *ColumnSchema, v any, ok bool) error {
	st := r.cols[cs.Name]
	if st != nil && st.loaded {
		return nil
	}
	var d datum.Datum
	if ok {
		var err error
		if d, err = datumFromJSON(cs.Type, v); err != nil {
			return fmt.Errorf("%s.%s of row %s: %w", r.t.schema.Name, cs.Name, r.uuid, err)
		}
	}
	r.mergeDatum(cs, d, ok)
	return nil
}

// mergeDatum records the server's value d (ok false when the server sent none: the column's
// default) of column cs, unless this invocation already has one.
func (r *Row) mergeDatum(cs *ColumnSchema, d datum.Datum, ok bool) {
	st := r.cols[cs.Name]
	if st != nil && st.loaded {
		return
	}
	if !ok {
		d = datum.DefaultDatum(cs.Type)
	}
	if st == nil {
		r.cols[cs.Name] = &colState{loaded: true, orig: d, cur: d}
		return
	}
	st.loaded, st.orig = true, d
	if !st.whole {
		st.cur = applyPending(cs.Type, d, st)
	}
}

// load makes sure the columns cols of r are loaded, with one select for those missing.
func (r *Row) load(ctx context.Context, cols ...string) error {
	var missing []string
	for _, c := range cols {
		if _, ok := r.t.schema.Columns[c]; !ok {
			return fmt.Errorf("table %s has no column %s", r.t.schema.Name, c)
		}
		if st := r.cols[c]; st == nil || !(st.loaded || st.whole) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 || r.inserted {
		return nil
	}
	_, err := r.db.fetch(ctx, r.t, []any{[]any{"_uuid", "==", []any{"uuid", r.uuid}}}, missing)
	if err != nil {
		return err
	}
	for _, c := range missing {
		if st := r.cols[c]; st == nil || !(st.loaded || st.whole) {
			// The row is gone from the server; it keeps default values for this invocation.
			_ = r.merge(c, nil)
		}
	}
	return nil
}

// UUID returns the row's UUID (a temporary one for a row inserted by this invocation, replaced
// by the real one in Result.UUIDs after Commit).
func (r *Row) UUID() string { return r.uuid }

// Table returns the row's table schema.
func (r *Row) Table() *TableSchema { return r.t.schema }

// Inserted reports whether the row was inserted by this invocation.
func (r *Row) Inserted() bool { return r.inserted }

// Deleted reports whether the row was deleted by this invocation.
func (r *Row) Deleted() bool { return r.deleted }

// Get returns the value of column col, reading it from the server if it is not loaded yet.
func (r *Row) Get(ctx context.Context, col string) (datum.Datum, error) {
	if err := r.load(ctx, col); err != nil {
		return datum.Datum{}, err
	}
	return r.cols[col].cur.Clone(), nil
}

// Loaded returns the value of col if it is known without a round trip.
func (r *Row) Loaded(col string) (datum.Datum, bool) {
	st := r.cols[col]
	if st == nil || !(st.loaded || st.whole) {
		return datum.Datum{}, false
	}
	return st.cur.Clone(), true
}

func (r *Row) touch() {
	if !r.touched {
		r.touched = true
		r.db.touched = append(r.db.touched, r)
	}
}

func (r *Row) state(col string) (*colState, *ColumnSchema, error) {
	cs, ok := r.t.schema.Columns[col]
	if !ok || col == "_uuid" || col == "_version" {
		return nil, nil, fmt.Errorf("table %s has no writable column %s", r.t.schema.Name, col)
	}
	st := r.cols[col]
	if st == nil {
		st = &colState{}
		r.cols[col] = st
	}
	return st, cs, nil
}

// Set replaces the value of column col with d (which must be of the column's type).
func (r *Row) Set(col string, d datum.Datum) error {
	st, _, err := r.state(col)
	if err != nil {
		return err
	}
	if !st.loaded {
		st.whole = true
		st.adds, st.dels, st.addVals = nil, nil, nil
	}
	st.cur, st.dirty = d.Clone(), true
	r.touch()
	return nil
}

// Add inserts the elements of d into set column col, or the pairs of d into map column col
// (keys already present keep their value, as OVSDB's "insert" mutation does). The column need
// not be loaded.
func (r *Row) Add(col string, d datum.Datum) error {
	st, cs, err := r.state(col)
	if err != nil {
		return err
	}
	isMap := cs.Type.IsMap()
	if st.loaded || st.whole {
		st.cur = datum.Union(st.cur, d, isMap)
	} else {
		for i, k := range d.Keys {
			st.dels = removeAtom(st.dels, k)
			if isMap {
				if j := slices.IndexFunc(st.adds, func(a datum.Atom) bool { return datum.CompareAtoms(a, k) == 0 }); j >= 0 {
					continue
				}
				st.adds = append(st.adds, k)
				st.addVals = append(st.addVals, d.Values[i])
			} else if !slices.ContainsFunc(st.adds, func(a datum.Atom) bool { return datum.CompareAtoms(a, k) == 0 }) {
				st.adds = append(st.adds, k)
			}
		}
	}
	st.dirty = true
	r.touch()
	return nil
}

// Remove deletes from column col: for a set, the elements of d; for a map, the pairs of d
// when d is a map datum (d.Values non-nil; a pair is removed only if its value matches), or the
// keys of d when d.Values is nil. The column need not be loaded for removing set elements or
// map keys.
func (r *Row) Remove(col string, d datum.Datum) error {
	st, cs, err := r.state(col)
	if err != nil {
		return err
	}
	isMap := cs.Type.IsMap()
	if !(st.loaded || st.whole) && isMap && d.Values != nil {
		// Removing pairs by value needs the current value.
		if err := r.load(context.Background(), col); err != nil {
			return err
		}
	}
	if st.loaded || st.whole {
		st.cur = datum.Subtract(st.cur, d, isMap)
	} else {
		for _, k := range d.Keys {
			if i := slices.IndexFunc(st.adds, func(a datum.Atom) bool { return datum.CompareAtoms(a, k) == 0 }); i >= 0 {
				st.adds = slices.Delete(st.adds, i, i+1)
				if isMap {
					st.addVals = slices.Delete(st.addVals, i, i+1)
				}
			}
			if _, inserted := r.db.temp[k.Str]; k.Type == datum.TypeUUID && inserted {
				continue // a row inserted by this invocation cannot be in the server's value
			}
			st.dels = append(removeAtom(st.dels, k), k)
		}
	}
	st.dirty = true
	r.touch()
	return nil
}

// Delete deletes the row. As OVS's IDL does, the deletion of a row of a non-root table is not
// sent: the row disappears from this invocation's view, and ovsdb-server deletes it when
// nothing refers to it any more after the commit.
func (r *Row) Delete() {
	if r.deleted {
		return
	}
	r.deleted = true
	r.touch()
}

// Verify makes the commit fail with TryAgain if column col of r changed on the server since
// this invocation read it (ovs-vsctl's "verify"). It loads col if needed. Rows inserted by this
// invocation need no verification.
func (r *Row) Verify(ctx context.Context, col string) error {
	if r.inserted {
		return nil
	}
	if err := r.load(ctx, col); err != nil {
		return err
	}
	st := r.cols[col]
	if !st.loaded {
		return nil
	}
	cs := r.t.schema.Columns[col]
	r.db.waits = append(r.db.waits, map[string]any{
		"op": "wait", "table": r.t.schema.Name, "timeout": 0,
		"where":   []any{[]any{"_uuid", "==", []any{"uuid", r.uuid}}},
		"columns": []string{col}, "until": "==",
		"rows": []any{map[string]any{col: encodeDatum(cs.Type, st.orig, nil)}},
	})
	return nil
}

type absentCheck struct {
	tc    *tableCache
	col   string
	value any
}

// VerifyAbsent makes the commit fail with TryAgain if, on the server, some row of table has
// column col equal to value (so a name found free stays free). Rows this invocation deletes
// do not count.
func (db *DB) VerifyAbsent(table, col string, value datum.Datum) error {
	tc, err := db.table(table)
	if err != nil {
		return err
	}
	cs, err := db.column(tc, col)
	if err != nil {
		return err
	}
	db.absent = append(db.absent, absentCheck{tc: tc, col: col, value: encodeDatum(cs.Type, value, nil)})
	return nil
}

// absentWaits turns the VerifyAbsent checks into wait operations.
func (db *DB) absentWaits() []any {
	var out []any
	for _, a := range db.absent {
		where := []any{[]any{a.col, "==", a.value}}
		for _, id := range a.tc.order {
			if r := a.tc.rows[id]; r != nil && r.deleted && !r.inserted {
				where = append(where, []any{"_uuid", "!=", []any{"uuid", id}})
			}
		}
		out = append(out, map[string]any{
			"op": "wait", "table": a.tc.schema.Name, "timeout": 0, "where": where,
			"columns": []string{"_uuid"}, "until": "==", "rows": []any{},
		})
	}
	return out
}

// Insert adds a new row to table, with default values in every column. uuid, when not empty,
// is the temporary UUID to give it (a symbol's UUID reserved earlier); otherwise one is drawn.
func (db *DB) Insert(table, uuid string) (*Row, error) {
	tc, err := db.table(table)
	if err != nil {
		return nil, err
	}
	if uuid == "" {
		uuid = NewUUID()
	}
	r := &Row{db: db, t: tc, uuid: uuid, cols: map[string]*colState{}, inserted: true}
	for name, cs := range tc.schema.Columns {
		d := datum.DefaultDatum(cs.Type)
		if name == "_uuid" {
			d = datum.Datum{Keys: []datum.Atom{{Type: datum.TypeUUID, Str: uuid}}}
		}
		r.cols[name] = &colState{loaded: true, orig: d, cur: d}
	}
	tc.rows[uuid] = r
	tc.order = append(tc.order, uuid)
	db.temp[uuid] = fmt.Sprintf("row%x", len(db.temp)+1)
	r.touch()
	return r, nil
}

// InsertPersistent adds a new row to table that the server will create with exactly the UUID
// uuid (the "uuid" member of the insert operation), as "create --id=UUID" does.
func (db *DB) InsertPersistent(table, uuid string) (*Row, error) {
	r, err := db.Insert(table, uuid)
	if err != nil {
		return nil, err
	}
	r.persist = true
	return r, nil
}

// NewUUID returns a random (version 4) UUID.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func removeAtom(list []datum.Atom, k datum.Atom) []datum.Atom {
	return slices.DeleteFunc(list, func(a datum.Atom) bool { return datum.CompareAtoms(a, k) == 0 })
}

// applyPending applies the pending changes of st to orig.
func applyPending(ct datum.ColumnType, orig datum.Datum, st *colState) datum.Datum {
	isMap := ct.IsMap()
	d := datum.Subtract(orig, datum.Datum{Keys: st.dels}, isMap)
	var vals []datum.Atom
	if isMap {
		vals = st.addVals
	}
	d = datum.Union(d, datum.NewDatum(st.adds, vals), isMap)
	st.adds, st.dels, st.addVals = nil, nil, nil
	return d
}

// Candidates returns a superset of the rows of table that satisfy every condition in conds
// ("==", or "includes" of a map of pairs on a map column), as this invocation sees them, with the columns cols loaded: the rows the
// server finds for conds, plus every row this invocation inserted or changed. Callers test
// their exact conditions on the result; the point is to let the server skip the rows that
// cannot match instead of sending the whole table. Rows come in the server's order, then the
// changed ones.
func (db *DB) Candidates(ctx context.Context, table string, conds []Cond, cols ...string) ([]*Row, error) {
	tc, err := db.table(table)
	if err != nil {
		return nil, err
	}
	if len(conds) == 0 || (tc.listed && db.allComplete(tc, cols)) {
		return db.All(ctx, table, cols...)
	}
	where := make([]any, 0, len(conds))
	for _, c := range conds {
		cs, err := db.column(tc, c.Column)
		if err != nil {
			return nil, err
		}
		if c.Op != "==" && (c.Op != "includes" || !cs.Type.IsMap() || len(c.Value.Keys) != len(c.Value.Values)) {
			return nil, fmt.Errorf("candidates on %s.%s: unsupported operator %q", table, c.Column, c.Op)
		}
		where = append(where, []any{c.Column, c.Op, encodeDatum(cs.Type, c.Value, db.namedOnly)})
	}
	ids, err := db.fetch(ctx, tc, where, cols)
	if err != nil {
		return nil, err
	}
	var out []*Row
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
		if r := tc.rows[id]; r != nil && !r.deleted {
			out = append(out, r)
		}
	}
	for _, id := range tc.order {
		r := tc.rows[id]
		if r == nil || r.deleted || seen[id] || !(r.inserted || r.touched) {
			continue
		}
		if err := r.load(ctx, cols...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// manyByListing is the number of rows past which GetMany lists the table instead.
const manyByListing = 256

// GetMany returns the rows of table with the given UUIDs, with the columns cols loaded, in
// one round trip whatever their number (one select by UUID each, in a single transaction);
// rows this invocation already knows with those columns are not asked for again. UUIDs with
// no row (or whose row this invocation deleted) are missing from the result, which is in the
// order of uuids.
func (db *DB) GetMany(ctx context.Context, table string, uuids []string, cols ...string) ([]*Row, error) {
	tc, err := db.table(table)
	if err != nil {
		return nil, err
	}
	want, err := db.selectColumns(tc, cols)
	if err != nil {
		return nil, err
	}
	var ask []string
	for _, id := range uuids {
		r := tc.rows[id]
		if r != nil && (r.inserted || r.hasAll(want[1:])) {
			continue
		}
		if r == nil && tc.listed {
			continue // not in the listing: no such row
		}
		ask = append(ask, id)
	}
	if len(ask) > manyByListing {
		// Past a few hundred rows ovsdb-server lists a whole table faster than it runs as
		// many selects; the table is then known, which also serves later lookups.
		if _, err := db.fetch(ctx, tc, nil, cols); err != nil {
			return nil, err
		}
		ask = nil
	}
	if len(ask) > 0 {
		ops := make([]any, len(ask))
		for i, id := range ask {
			ops[i] = map[string]any{
				"op": "select", "table": table, "columns": want,
				"where": []any{[]any{"_uuid", "==", []any{"uuid", id}}},
			}
		}
		var res []selReply
		if err := db.conn.TransactInto(ctx, ops, &res); err != nil {
			return nil, err
		}
		merged := &selReply{}
		for i := range res {
			if res[i].Error != "" {
				return nil, fmt.Errorf("select on %s: %s: %s", table, res[i].Error, res[i].Details)
			}
			merged.Rows = append(merged.Rows, res[i].Rows...)
		}
		if _, err := db.mergeReply(tc, false, want, merged); err != nil {
			return nil, err
		}
	}
	out := make([]*Row, 0, len(uuids))
	for _, id := range uuids {
		if r := tc.rows[id]; r != nil && !r.deleted {
			if err := r.load(ctx, cols...); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// hasAll reports whether the columns cols of r are known without a round trip.
func (r *Row) hasAll(cols []string) bool {
	for _, c := range cols {
		if st := r.cols[c]; st == nil || !(st.loaded || st.whole) {
			return false
		}
	}
	return true
}
