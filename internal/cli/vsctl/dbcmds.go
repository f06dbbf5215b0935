package vsctl

import (
	"fmt"
	"strings"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// registerDBCommands adds the generic database commands of ovs-vsctl (comment, get, list,
// find, set, add, remove, clear, create, destroy, wait-until) to m.
func registerDBCommands(m map[string]Handler) {
	m["comment"] = Handler{Run: func(*Context) error { return nil }}
	m["get"] = Handler{Pre: preGet, Run: runGet}
	m["list"] = Handler{Pre: preList, Run: runList}
	m["find"] = Handler{Pre: preFind, Run: runFind}
	m["set"] = Handler{Pre: preSet, Run: runSet}
	m["add"] = Handler{Pre: preAddRemove, Run: runAdd}
	m["remove"] = Handler{Pre: preAddRemove, Run: runRemove}
	m["clear"] = Handler{Pre: preClear, Run: runClear}
	m["create"] = Handler{Pre: preCreate, Run: runCreate, Post: postCreate}
	m["destroy"] = Handler{Pre: preDestroy, Run: runDestroy}
	m["wait-until"] = Handler{Pre: preWaitUntil, Run: runWaitUntil}
}

// renderTable returns what ovs-vsctl prints for a command's table in the style the global
// options select.

// valueErr turns an error of the value layer into a fatal error with its message.
func valueErr(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*Error); ok {
		return err
	}
	return &Error{Msg: err.Error()}
}

// invalidateCache drops the vswitch commands' cache after a generic command changed the
// database behind its back (ovs-vsctl's invalidate_cache).
func invalidateCache(c *Context) {
	if c.State != nil {
		c.State.vs = nil
	}
}

// isUUIDArg reports whether a get argument asks for the row's UUID.
func isUUIDArg(arg string) bool {
	return strings.EqualFold(arg, "_uuid") || strings.EqualFold(arg, "-uuid")
}

func preGet(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	for _, arg := range c.Cmd.Args[2:] {
		if isUUIDArg(arg) {
			continue
		}
		if err := preColumnArg(ts, arg); err != nil {
			return err
		}
	}
	return nil
}

// argColumns returns the columns named at the start of the arguments args (those that parse;
// the others are reported when the command runs), for fetching them with the record.
func argColumns(ts *dbcmd.TableSchema, args []string) []string {
	var cols []string
	for _, arg := range args {
		name, _, err := parseToken(arg)
		if err != nil || name == "" {
			continue
		}
		if cs, err := findColumn(ts, name); err == nil {
			cols = append(cols, cs.Name)
		}
	}
	return cols
}

func runGet(c *Context) error {
	id, hasID := c.Cmd.Option("--id")
	mustExist := !c.Cmd.Has("--if-exists")
	if hasID && !mustExist {
		return Fatalf("--if-exists and --id may not be specified together")
	}
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	recordID := c.Cmd.Args[1]
	row, err := getRow(c, ts, recordID, mustExist, argColumns(ts, c.Cmd.Args[2:])...)
	if err != nil || row == nil {
		return err
	}
	if hasID {
		sym, isNew, err := c.Symbols.Create(id)
		if err != nil {
			return err
		}
		if !isNew {
			return Fatalf("row id \"%s\" specified on \"get\" command was used before it was defined", id)
		}
		sym.UUID = row.UUID()
		// The row exists already: no reference is needed to keep it.
		sym.StrongRef = true
	}
	for _, arg := range c.Cmd.Args[2:] {
		if isUUIDArg(arg) {
			c.Printf("%s\n", row.UUID())
			continue
		}
		ca, err := parseColumnArg(ts, arg, nil)
		if err != nil {
			return err
		}
		col := ca.Col
		if err := row.Verify(c.Ctx, col.Name); err != nil {
			return err
		}
		d, err := row.Get(c.Ctx, col.Name)
		if err != nil {
			return err
		}
		if !ca.HasKey {
			c.Printf("%s\n", datum.FormatDatum(col.Type, d, datum.DataString))
			continue
		}
		if !col.Type.IsMap() {
			return Fatalf("cannot specify key to get for non-map column %s", col.Name)
		}
		key, err := datum.ParseAtom(col.Type.Key, ca.Key, symbolRefs(c.Symbols, col.Type))
		if err != nil {
			return valueErr(err)
		}
		if i, ok := d.Find(key); ok {
			c.Printf("%s", datum.FormatDatum(scalarOf(*col.Type.Value), datum.Datum{Keys: []datum.Atom{d.Values[i]}}, datum.DataString))
		} else if mustExist {
			return Fatalf("no key \"%s\" in %s record \"%s\" column %s", ca.Key, ts.Name, recordID, col.Name)
		}
		c.Printf("\n")
	}
	return nil
}

// listColumns resolves the --columns option of list and find: nil entries stand for _uuid.
// Without the option, _uuid and every column in name order.
func listColumns(ts *dbcmd.TableSchema, c *cli.Command) ([]*dbcmd.ColumnSchema, error) {
	names, ok := c.Option("--columns")
	if !ok {
		cols := []*dbcmd.ColumnSchema{nil}
		for _, n := range ts.ColumnNames() {
			cols = append(cols, ts.Columns[n])
		}
		return cols, nil
	}
	var cols []*dbcmd.ColumnSchema
	for _, n := range strings.FieldsFunc(names, func(r rune) bool { return r == ',' || r == ' ' }) {
		if strings.EqualFold(n, "_uuid") {
			cols = append(cols, nil)
			continue
		}
		cs, err := findColumn(ts, n)
		if err != nil {
			return nil, err
		}
		cols = append(cols, cs)
	}
	if len(cols) == 0 {
		return nil, Fatalf("must specify at least one column name")
	}
	return cols, nil
}

// fetchColumns returns the names of the real columns among cols, plus extra, for one select
// (at least "_uuid", so that a select never asks for every column by accident).
func fetchColumns(cols []*dbcmd.ColumnSchema, extra ...string) []string {
	out := []string{"_uuid"}
	for _, cs := range cols {
		if cs != nil {
			out = append(out, cs.Name)
		}
	}
	return append(out, extra...)
}

func newListTable(cols []*dbcmd.ColumnSchema) *cli.OutputTable {
	t := &cli.OutputTable{Headings: []string{}, Rows: [][]cli.Cell{}}
	for _, cs := range cols {
		if cs == nil {
			t.Headings = append(t.Headings, "_uuid")
		} else {
			t.Headings = append(t.Headings, cs.Name)
		}
	}
	return t
}

// addListRow appends row's cells for cols to t.
func addListRow(c *Context, t *cli.OutputTable, row *dbcmd.Row, cols []*dbcmd.ColumnSchema) error {
	cells := make([]cli.Cell, len(cols))
	for i, cs := range cols {
		if cs == nil {
			cells[i] = cli.Cell{Type: uuidColumnType(), Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeUUID, Str: row.UUID()}}}}
			continue
		}
		d, err := row.Get(c.Ctx, cs.Name)
		if err != nil {
			return err
		}
		cells[i] = cli.Cell{Type: cs.Type, Datum: d}
	}
	t.Rows = append(t.Rows, cells)
	return nil
}

func preList(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	_, err = listColumns(ts, c.Cmd)
	return err
}

func runList(c *Context) error {
	mustExist := !c.Cmd.Has("--if-exists")
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	cols, err := listColumns(ts, c.Cmd)
	if err != nil {
		return err
	}
	t := newListTable(cols)
	c.Table = t
	want := fetchColumns(cols)
	if len(c.Cmd.Args) > 1 {
		for _, id := range c.Cmd.Args[1:] {
			row, err := getRow(c, ts, id, mustExist, want...)
			if err != nil {
				return err
			}
			if row != nil {
				if err := addListRow(c, t, row, cols); err != nil {
					return err
				}
			}
		}
		return nil
	}
	rows, err := c.DB.All(c.Ctx, ts.Name, want...)
	if err != nil {
		return err
	}
	for _, row := range idlOrder(rows) {
		if err := addListRow(c, t, row, cols); err != nil {
			return err
		}
	}
	return nil
}

func preFind(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	if _, err := listColumns(ts, c.Cmd); err != nil {
		return err
	}
	for _, arg := range c.Cmd.Args[1:] {
		if err := preColumnArg(ts, arg); err != nil {
			return err
		}
	}
	return nil
}

// serverConds returns the conditions of a find that ovsdb-server can apply itself, so that it
// sends only the rows that may match: the COLUMN=VALUE equalities, and the COLUMN:KEY=VALUE
// tests of a map column (`find Interface external_ids:iface-id=ID`, the lookup OpenStack's
// agents issue most), when every condition of the command is valid and refers to no @name (so
// that leaving rows out cannot hide an error ovs-vsctl would report, nor a symbol it would
// define). Otherwise none.
//
// COLUMN:KEY=VALUE holds exactly when the map has the pair KEY→VALUE (a missing key fails "=";
// VALUE is a set of the map's value type, and only a one-element set can equal the one value a
// key has), which is the server's "includes" of the one-pair map {KEY: VALUE}. Maps of reals are
// left to the client: the server compares doubles as doubles, the client as parsed text may not.
func serverConds(ts *dbcmd.TableSchema, args []string) []dbcmd.Cond {
	var out []dbcmd.Cond
	for _, arg := range args {
		if strings.Contains(arg, "@") {
			return nil
		}
		cond, err := parseCondition(ts, arg, NewSymbols())
		if err != nil {
			return nil
		}
		switch {
		case cond.op == "=" && !cond.hasKey:
			out = append(out, dbcmd.Cond{Column: cond.col.Name, Op: "==", Value: cond.want})
		case cond.op == "=" && len(cond.want.Keys) == 1 &&
			cond.key.Type != datum.TypeReal && cond.want.Keys[0].Type != datum.TypeReal:
			out = append(out, dbcmd.Cond{Column: cond.col.Name, Op: "includes",
				Value: datum.Datum{Keys: []datum.Atom{cond.key}, Values: []datum.Atom{cond.want.Keys[0]}}})
		}
	}
	return out
}

func runFind(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	cols, err := listColumns(ts, c.Cmd)
	if err != nil {
		return err
	}
	t := newListTable(cols)
	c.Table = t
	args := c.Cmd.Args[1:]
	server := serverConds(ts, args)
	rows, err := c.DB.Candidates(c.Ctx, ts.Name, server, fetchColumns(cols, argColumns(ts, args)...)...)
	if err != nil {
		return err
	}
	rows = idlOrder(rows)
	// Conditions are parsed when first needed, as ovs-vsctl parses them row by row: an
	// empty table reports no error.
	conds := make([]*condition, len(args))
	var found []*dbcmd.Row
	for _, row := range rows {
		ok := true
		for i, arg := range args {
			if conds[i] == nil {
				if conds[i], err = parseCondition(ts, arg, c.Symbols); err != nil {
					return err
				}
			}
			if ok, err = conds[i].eval(c.Ctx, row); err != nil {
				return err
			}
			if !ok {
				break
			}
		}
		if ok {
			found = append(found, row)
		}
	}
	if len(server) > 0 && len(found) > 1 {
		// ovs-vsctl prints in the order of its hash table of the whole table, whose shape
		// depends on every row: order the matches by the full listing (UUIDs only).
		if found, err = inTableOrder(c, ts, found); err != nil {
			return err
		}
	}
	for _, row := range found {
		if err := addListRow(c, t, row, cols); err != nil {
			return err
		}
	}
	return nil
}

// inTableOrder returns rows (some rows of table ts) in the order idlOrder gives them among all
// the rows of the table, which it lists by UUID.
func inTableOrder(c *Context, ts *dbcmd.TableSchema, rows []*dbcmd.Row) ([]*dbcmd.Row, error) {
	all, err := c.DB.All(c.Ctx, ts.Name, "_uuid")
	if err != nil {
		return nil, err
	}
	want := make(map[*dbcmd.Row]bool, len(rows))
	for _, r := range rows {
		want[r] = true
	}
	out := make([]*dbcmd.Row, 0, len(rows))
	for _, r := range idlOrder(all) {
		if want[r] {
			out = append(out, r)
		}
	}
	return out, nil
}

func preSet(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	for _, arg := range c.Cmd.Args[2:] {
		if err := preColumnArg(ts, arg); err != nil {
			return err
		}
	}
	return nil
}

// checkMutable refuses changes to a read-only column, except in a row this invocation inserts.
func checkMutable(ts *dbcmd.TableSchema, row *dbcmd.Row, cs *dbcmd.ColumnSchema) error {
	if !cs.Mutable && !row.Inserted() {
		return Fatalf("cannot modify read-only column %s in table %s", cs.Name, ts.Name)
	}
	return nil
}

// setColumnArg applies one COLUMN[:KEY]=VALUE argument to row. verify asks for the column to be
// verified when a key is set (the whole map is rewritten then).
func setColumnArg(c *Context, ts *dbcmd.TableSchema, row *dbcmd.Row, arg string, verify bool) error {
	ca, err := parseColumnArg(ts, arg, []string{"="})
	if err != nil {
		return err
	}
	col := ca.Col
	if err := checkMutable(ts, row, col); err != nil {
		return err
	}
	ct := col.Type
	if !ca.HasKey {
		d, err := datum.ParseDatum(ct, ca.Value, symbolRefs(c.Symbols, ct))
		if err != nil {
			return valueErr(err)
		}
		return row.Set(col.Name, d)
	}
	if !ct.IsMap() {
		return Fatalf("cannot specify key to set for non-map column %s", col.Name)
	}
	refs := symbolRefs(c.Symbols, ct)
	key, err := datum.ParseAtom(ct.Key, ca.Key, refs)
	if err != nil {
		return valueErr(err)
	}
	val, err := datum.ParseAtom(*ct.Value, ca.Value, refs)
	if err != nil {
		return valueErr(err)
	}
	if verify {
		if err := row.Verify(c.Ctx, col.Name); err != nil {
			return err
		}
	}
	old, err := row.Get(c.Ctx, col.Name)
	if err != nil {
		return err
	}
	keys, vals := []datum.Atom{key}, []datum.Atom{val}
	for i, k := range old.Keys {
		if datum.CompareAtoms(k, key) != 0 {
			keys = append(keys, k)
			vals = append(vals, old.Values[i])
		}
	}
	return row.Set(col.Name, datum.NewDatum(keys, vals))
}

func runSet(c *Context) error {
	mustExist := !c.Cmd.Has("--if-exists")
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	row, err := getRow(c, ts, c.Cmd.Args[1], mustExist, argColumns(ts, c.Cmd.Args[2:])...)
	if err != nil || row == nil {
		return err
	}
	for _, arg := range c.Cmd.Args[2:] {
		if err := setColumnArg(c, ts, row, arg, !c.Last); err != nil {
			return err
		}
	}
	invalidateCache(c)
	return nil
}

func preAddRemove(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	_, err = findColumn(ts, c.Cmd.Args[2])
	return err
}

// elementsWord names the elements of a column of type ct in add and remove errors.
func elementsWord(ct datum.ColumnType) string {
	if ct.IsMap() {
		return "pairs"
	}
	return "values"
}

// elementsType is the type of the arguments of add and remove: the column's, with one or more
// elements.
func elementsType(ct datum.ColumnType) datum.ColumnType {
	ct.Min, ct.Max = 1, datum.MaxUnlimited
	return ct
}

// rowAndColumn resolves the TABLE RECORD COLUMN arguments of add and remove; row is nil (and
// err too) when the record does not exist and --if-exists was given. The column is read with
// the row unless lazy is set.
func rowAndColumn(c *Context, lazy bool) (*dbcmd.TableSchema, *dbcmd.Row, *dbcmd.ColumnSchema, error) {
	mustExist := !c.Cmd.Has("--if-exists")
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return nil, nil, nil, err
	}
	col, err := findColumn(ts, c.Cmd.Args[2])
	if err != nil {
		return nil, nil, nil, err
	}
	var cols []string
	if !lazy {
		cols = []string{col.Name}
	}
	row, err := getRow(c, ts, c.Cmd.Args[1], mustExist, cols...)
	if err != nil || row == nil {
		return nil, nil, nil, err
	}
	if err := checkMutable(ts, row, col); err != nil {
		return nil, nil, nil, err
	}
	return ts, row, col, nil
}

// runAdd adds elements to a set or map column. As the last command of an invocation,
// ovs-vsctl 3.1 sends the additions as mutations without checking the column's size (the
// server does) and without verifying the column; a map key already present takes the new
// value then. Otherwise it rewrites the column, keeping the values of keys already present.
func runAdd(c *Context) error {
	isMap := false
	if ts, err := findTable(c.Schema, c.Cmd.Args[0]); err == nil {
		if col, err := findColumn(ts, c.Cmd.Args[2]); err == nil {
			isMap = col.Type.IsMap()
		}
	}
	partial := c.Last
	ts, row, col, err := rowAndColumn(c, partial && !isMap)
	if err != nil || row == nil {
		return err
	}
	ct := col.Type
	at := elementsType(ct)
	var adds []datum.Datum
	for _, arg := range c.Cmd.Args[3:] {
		add, err := datum.ParseDatum(at, arg, symbolRefs(c.Symbols, ct))
		if err != nil {
			return valueErr(err)
		}
		adds = append(adds, add)
	}
	if partial && !isMap {
		for _, add := range adds {
			if err := row.Add(col.Name, add); err != nil {
				return err
			}
		}
		invalidateCache(c)
		return nil
	}
	d, err := row.Get(c.Ctx, col.Name)
	if err != nil {
		return err
	}
	if partial {
		// As one mutation: among the arguments the first value of a key counts; the new
		// values then win over the column's.
		var all datum.Datum
		for i, add := range adds {
			if i == 0 {
				all = add
			} else {
				all = datum.Union(all, add, true)
			}
		}
		if len(adds) > 0 {
			d = datum.Union(all, d, true)
		}
	} else {
		for _, add := range adds {
			d = datum.Union(d, add, isMap)
		}
	}
	if n := uint64(len(d.Keys)); !partial && n > ct.Max {
		return Fatalf("\"add\" operation would put %d %s in column %s of table %s but the maximum number is %d",
			n, elementsWord(ct), col.Name, ts.Name, ct.Max)
	}
	if !partial {
		if err := row.Verify(c.Ctx, col.Name); err != nil {
			return err
		}
	}
	if err := row.Set(col.Name, d); err != nil {
		return err
	}
	invalidateCache(c)
	return nil
}

func runRemove(c *Context) error {
	ts, row, col, err := rowAndColumn(c, false)
	if err != nil || row == nil {
		return err
	}
	ct := col.Type
	d, err := row.Get(c.Ctx, col.Name)
	if err != nil {
		return err
	}
	rt := elementsType(ct)
	for _, arg := range c.Cmd.Args[3:] {
		rm, err := datum.ParseDatum(rt, arg, symbolRefs(c.Symbols, ct))
		if err != nil {
			if !ct.IsMap() {
				return valueErr(err)
			}
			// A map also accepts bare keys.
			kt := rt
			kt.Value = nil
			if rm, err = datum.ParseDatum(kt, arg, symbolRefs(c.Symbols, kt)); err != nil {
				return valueErr(err)
			}
			rm.Values = nil
		}
		d = datum.Subtract(d, rm, ct.IsMap())
	}
	if n := uint64(len(d.Keys)); n < ct.Min {
		return Fatalf("\"remove\" operation would put %d %s in column %s of table %s but the minimum number is %d",
			n, elementsWord(ct), col.Name, ts.Name, ct.Min)
	}
	if err := row.Verify(c.Ctx, col.Name); err != nil {
		return err
	}
	if err := row.Set(col.Name, d); err != nil {
		return err
	}
	invalidateCache(c)
	return nil
}

func preClear(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	for _, arg := range c.Cmd.Args[2:] {
		if _, err := findColumn(ts, arg); err != nil {
			return err
		}
	}
	return nil
}

func runClear(c *Context) error {
	mustExist := !c.Cmd.Has("--if-exists")
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	row, err := getRow(c, ts, c.Cmd.Args[1], mustExist)
	if err != nil || row == nil {
		return err
	}
	for _, arg := range c.Cmd.Args[2:] {
		col, err := findColumn(ts, arg)
		if err != nil {
			return err
		}
		if err := checkMutable(ts, row, col); err != nil {
			return err
		}
		if col.Type.Min > 0 {
			return Fatalf("\"clear\" operation cannot be applied to column %s of table %s, which is not allowed to be empty",
				col.Name, ts.Name)
		}
		// Read the column first: clearing an empty column is no change, and ovs-vsctl then
		// sends nothing (and does not bump next_cfg).
		if _, err := row.Get(c.Ctx, col.Name); err != nil {
			return err
		}
		if err := row.Set(col.Name, datum.DefaultDatum(col.Type)); err != nil {
			return err
		}
	}
	invalidateCache(c)
	return nil
}

func preCreate(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	if _, hasID := c.Cmd.Option("--id"); !hasID && !ts.IsRoot {
		dbWarnf(c, "db_ctl_base", "applying \"create\" command to table %s without --id option will have no effect", ts.Name)
	}
	return nil
}

func runCreate(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	uuid, persist := "", false
	if id, ok := c.Cmd.Option("--id"); ok {
		if isFullUUID(id) {
			// ovs-vsctl 3.1 asks the server to give the row exactly this UUID.
			uuid, persist = strings.ToLower(id), true
		} else {
			sym, _, err := c.Symbols.Create(id)
			if err != nil {
				return err
			}
			if ts.IsRoot {
				// Rows of root tables stay without references: no warning about them.
				sym.StrongRef = true
			}
			uuid = sym.UUID
		}
	}
	insert := c.DB.Insert
	if persist {
		insert = c.DB.InsertPersistent
	}
	row, err := insert(ts.Name, uuid)
	if err != nil {
		return err
	}
	for _, arg := range c.Cmd.Args[1:] {
		if err := setColumnArg(c, ts, row, arg, false); err != nil {
			return err
		}
	}
	c.Printf("%s", row.UUID())
	return nil
}

// postCreate replaces the temporary UUID printed by runCreate by the one the server gave the
// row (kept when there is none, as with --dry-run).
func postCreate(c *Context) error {
	temp := c.Out.String()
	c.Out.Reset()
	if c.Result != nil {
		if real, ok := c.Result.UUIDs[temp]; ok {
			temp = real
		}
	}
	fmt.Fprintf(&c.Out, "%s\n", temp)
	return nil
}

func preDestroy(c *Context) error {
	_, err := findTable(c.Schema, c.Cmd.Args[0])
	return err
}

func runDestroy(c *Context) error {
	mustExist := !c.Cmd.Has("--if-exists")
	all := c.Cmd.Has("--all")
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	records := c.Cmd.Args[1:]
	switch {
	case all && len(records) > 0:
		return Fatalf("--all and records argument should not be specified together")
	case all && !mustExist:
		return Fatalf("--all and --if-exists should not be specified together")
	case !all && len(records) == 0:
		dbWarnf(c, "db_ctl_base", "either --all or records argument should be specified")
		return nil
	}
	if all {
		rows, err := c.DB.All(c.Ctx, ts.Name, "_uuid")
		if err != nil {
			return err
		}
		for _, r := range rows {
			deleteRow(r)
		}
	} else {
		for _, id := range records {
			row, err := getRow(c, ts, id, mustExist)
			if err != nil {
				return err
			}
			if row != nil {
				deleteRow(row)
			}
		}
	}
	invalidateCache(c)
	return nil
}

// deleteRow deletes row as ovs-vsctl's IDL does: a row of a root table is deleted, one of
// another table is left for ovsdb-server to collect once nothing refers to it (no delete
// is sent; a row inserted by this invocation is dropped).
//
// The engine cannot yet hide a row from later lookups without deleting it, so a later command
// of the same invocation still sees such a row.
func deleteRow(row *dbcmd.Row) {
	if row.Table().IsRoot || row.Inserted() {
		row.Delete()
	}
}

func preWaitUntil(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	for _, arg := range c.Cmd.Args[2:] {
		if err := preColumnArg(ts, arg); err != nil {
			return err
		}
	}
	return nil
}

func runWaitUntil(c *Context) error {
	ts, err := findTable(c.Schema, c.Cmd.Args[0])
	if err != nil {
		return err
	}
	args := c.Cmd.Args[2:]
	row, err := getRow(c, ts, c.Cmd.Args[1], false, argColumns(ts, args)...)
	if err != nil {
		return err
	}
	if row == nil {
		return ErrTryAgain
	}
	for _, arg := range args {
		cond, err := parseCondition(ts, arg, c.Symbols)
		if err != nil {
			return err
		}
		ok, err := cond.eval(c.Ctx, row)
		if err != nil {
			return err
		}
		if !ok {
			return ErrTryAgain
		}
	}
	return nil
}

// dbWarnf logs a warning as ovs-vsctl's VLOG_WARN does ("...|MODULE|WARN|message" on stderr).
// The runner gives commands no logger yet, so the warning is dropped for now.
func dbWarnf(c *Context, module, format string, args ...any) {
	c.Logf(module, "WARN", format, args...)
}
