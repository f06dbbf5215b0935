package vsctl

import (
	"context"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// relOps are the operators of find and wait-until conditions, in the order ovs-vsctl lists
// them in its error message.
func relOps() []string {
	return []string{"=", "!=", "<", ">", "<=", ">=", "{=}", "{!=}", "{<}", "{>}", "{<=}", "{>=}", "{in}", "{not-in}"}
}

// condition is one parsed COLUMN[:KEY]OP VALUE test.
type condition struct {
	col    *dbcmd.ColumnSchema
	hasKey bool
	key    datum.Atom
	op     string
	want   datum.Datum
	// typ is the type the values are compared as: the column's (with no upper bound), or
	// for a key test a set of the map's value type.
	typ datum.ColumnType
}

// parseCondition parses a condition on table ts. "@name" references in it become symbols.
func parseCondition(ts *dbcmd.TableSchema, arg string, syms *Symbols) (*condition, error) {
	ca, err := parseColumnArg(ts, arg, relOps())
	if err != nil {
		return nil, err
	}
	ct := ca.Col.Type
	cond := &condition{col: ca.Col, op: ca.Op, hasKey: ca.HasKey}
	if ca.HasKey {
		if !ct.IsMap() {
			return nil, Fatalf("cannot specify key to check for non-map column %s", ca.Col.Name)
		}
		if cond.key, err = datum.ParseAtom(ct.Key, ca.Key, symbolRefs(syms, ct)); err != nil {
			return nil, &Error{Msg: err.Error()}
		}
		cond.typ = datum.ColumnType{Key: *ct.Value, Min: ct.Min, Max: datum.MaxUnlimited}
		if cond.want, err = datum.ParseDatum(cond.typ, ca.Value, symbolRefs(syms, cond.typ)); err != nil {
			return nil, &Error{Msg: err.Error()}
		}
		return cond, nil
	}
	if cond.want, err = datum.ParseDatum(ct, ca.Value, symbolRefs(syms, ct)); err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	cond.typ = ct
	cond.typ.Max = datum.MaxUnlimited
	return cond, nil
}

// eval tests the condition on row (reading its column if needed).
func (cond *condition) eval(ctx context.Context, row *dbcmd.Row) (bool, error) {
	have, err := row.Get(ctx, cond.col.Name)
	if err != nil {
		return false, err
	}
	if !cond.hasKey {
		return evalRelOp(have, cond.want, cond.typ.IsMap(), cond.op), nil
	}
	i, found := have.Find(cond.key)
	if !found && !isSetOp(cond.op) {
		return false, nil
	}
	a := datum.Datum{Keys: []datum.Atom{}}
	if found {
		a.Keys = []datum.Atom{have.Values[i]}
	}
	return evalRelOp(a, cond.want, false, cond.op), nil
}

func isSetOp(op string) bool { return op[0] == '{' }

// evalRelOp compares a (the row's value) with b (the wanted one) as ovs-vsctl does: the plain
// operators order data by size first, then element by element; the {} operators treat them
// as sets (of key-value pairs for maps).
func evalRelOp(a, b datum.Datum, isMap bool, op string) bool {
	switch op {
	case "=", "{=}":
		return compareData(a, b, isMap) == 0
	case "!=", "{!=}":
		return compareData(a, b, isMap) != 0
	case "<":
		return compareData(a, b, isMap) < 0
	case ">":
		return compareData(a, b, isMap) > 0
	case "<=":
		return compareData(a, b, isMap) <= 0
	case ">=":
		return compareData(a, b, isMap) >= 0
	case "{<}":
		return len(b.Keys) > len(a.Keys) && includesAll(a, b, isMap)
	case "{>}":
		return len(a.Keys) > len(b.Keys) && includesAll(b, a, isMap)
	case "{<=}", "{in}":
		return includesAll(a, b, isMap)
	case "{>=}":
		return includesAll(b, a, isMap)
	case "{not-in}":
		return excludesAll(a, b, isMap)
	}
	return false
}

// compareData orders two sorted data: by number of elements, then keys, then map values.
func compareData(a, b datum.Datum, isMap bool) int {
	if len(a.Keys) != len(b.Keys) {
		if len(a.Keys) < len(b.Keys) {
			return -1
		}
		return 1
	}
	for i := range a.Keys {
		if c := datum.CompareAtoms(a.Keys[i], b.Keys[i]); c != 0 {
			return c
		}
	}
	if !isMap {
		return 0
	}
	for i := range a.Values {
		if c := datum.CompareAtoms(a.Values[i], b.Values[i]); c != 0 {
			return c
		}
	}
	return 0
}

// hasElement reports whether element i of a (a key, or a key-value pair for maps) is in b.
func hasElement(a datum.Datum, i int, b datum.Datum, isMap bool) bool {
	j, ok := b.Find(a.Keys[i])
	if !ok {
		return false
	}
	return !isMap || datum.CompareAtoms(a.Values[i], b.Values[j]) == 0
}

func includesAll(a, b datum.Datum, isMap bool) bool {
	if len(a.Keys) > len(b.Keys) {
		return false
	}
	for i := range a.Keys {
		if !hasElement(a, i, b, isMap) {
			return false
		}
	}
	return true
}

func excludesAll(a, b datum.Datum, isMap bool) bool {
	for i := range a.Keys {
		if hasElement(a, i, b, isMap) {
			return false
		}
	}
	return true
}
