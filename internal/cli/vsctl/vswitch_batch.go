package vsctl

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ovsplane/ovsplane/internal/cli"
)

// readRows returns columns cols of the rows of table whose UUIDs are uuids, by UUID (rows
// that do not exist are missing), in one round trip whatever their number.
//
// When this invocation has changed nothing yet, the rows are read with one "select" per UUID
// in a single transaction, bypassing the DB view (which reads one UUID per round trip), so
// reading the ports of a bridge costs the size of that bridge, not of the switch. Once the
// view holds changes, the whole table is read through the view instead (one round trip, but
// proportional to the table) so that those changes are seen.
func (v *vsView) readRows(table string, uuids []string, cols ...string) (map[string]map[string]cli.Datum, error) {
	out := make(map[string]map[string]cli.Datum, len(uuids))
	if len(uuids) == 0 {
		return out, nil
	}
	if v.c.State.vs.populated || v.db.HasChanges() {
		rows, err := v.db.All(v.c.Ctx, table, cols...)
		if err != nil {
			return nil, err
		}
		want := make(map[string]bool, len(uuids))
		for _, u := range uuids {
			want[u] = true
		}
		for _, r := range rows {
			if !want[r.UUID()] {
				continue
			}
			m := make(map[string]cli.Datum, len(cols))
			for _, c := range cols {
				m[c], _ = r.Loaded(c)
			}
			out[r.UUID()] = m
		}
		return out, nil
	}
	ts := v.c.Schema.Tables[table]
	if ts == nil {
		return nil, fmt.Errorf("no table %s", table)
	}
	ops := make([]any, len(uuids))
	for i, u := range uuids {
		ops[i] = map[string]any{
			"op": "select", "table": table, "columns": cols,
			"where": []any{[]any{"_uuid", "==", []any{"uuid", u}}},
		}
	}
	res, err := v.db.Conn().Transact(v.c.Ctx, ops)
	if err != nil {
		return nil, err
	}
	for i, raw := range res {
		if i >= len(uuids) {
			break
		}
		var sel struct {
			Rows  []map[string]json.RawMessage `json:"rows"`
			Error string                       `json:"error"`
		}
		if err := json.Unmarshal(raw, &sel); err != nil {
			return nil, fmt.Errorf("select on %s: %w", table, err)
		}
		if sel.Error != "" {
			return nil, fmt.Errorf("select on %s: %s", table, sel.Error)
		}
		if len(sel.Rows) != 1 {
			continue
		}
		m := make(map[string]cli.Datum, len(cols))
		for _, c := range cols {
			cs := ts.Columns[c]
			if cs == nil {
				return nil, fmt.Errorf("table %s has no column %s", table, c)
			}
			d, err := decodeWire(cs.Type, sel.Rows[0][c])
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", table, c, err)
			}
			m[c] = d
		}
		out[uuids[i]] = m
	}
	return out, nil
}

// decodeWire decodes an RFC 7047 value of type ct (strings, integers, booleans, reals, UUIDs;
// scalars, sets and maps).
func decodeWire(ct cli.ColumnType, raw json.RawMessage) (cli.Datum, error) {
	if raw == nil {
		return cli.DefaultDatum(ct), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return cli.Datum{}, err
	}
	vt := ct.Key
	if ct.Value != nil {
		vt = *ct.Value
	}
	if arr, ok := val.([]any); ok && len(arr) == 2 {
		switch arr[0] {
		case "set":
			elems, _ := arr[1].([]any)
			keys := make([]cli.Atom, 0, len(elems))
			for _, e := range elems {
				a, err := atomWire(ct.Key.Type, e)
				if err != nil {
					return cli.Datum{}, err
				}
				keys = append(keys, a)
			}
			if ct.IsMap() {
				return cli.NewDatum(keys, []cli.Atom{}), nil
			}
			return cli.NewDatum(keys, nil), nil
		case "map":
			pairs, _ := arr[1].([]any)
			keys := make([]cli.Atom, 0, len(pairs))
			vals := make([]cli.Atom, 0, len(pairs))
			for _, p := range pairs {
				kv, ok := p.([]any)
				if !ok || len(kv) != 2 {
					return cli.Datum{}, fmt.Errorf("bad map pair")
				}
				k, err := atomWire(ct.Key.Type, kv[0])
				if err != nil {
					return cli.Datum{}, err
				}
				x, err := atomWire(vt.Type, kv[1])
				if err != nil {
					return cli.Datum{}, err
				}
				keys, vals = append(keys, k), append(vals, x)
			}
			return cli.NewDatum(keys, vals), nil
		}
	}
	a, err := atomWire(ct.Key.Type, val)
	if err != nil {
		return cli.Datum{}, err
	}
	return cli.Datum{Keys: []cli.Atom{a}}, nil
}

func atomWire(t cli.AtomicType, val any) (cli.Atom, error) {
	a := cli.Atom{Type: t}
	switch x := val.(type) {
	case string:
		if t == cli.TypeString {
			a.Str = x
			return a, nil
		}
	case bool:
		if t == cli.TypeBoolean {
			a.Bool = x
			return a, nil
		}
	case json.Number:
		switch t {
		case cli.TypeInteger:
			n, err := x.Int64()
			a.Int = n
			return a, err
		case cli.TypeReal:
			f, err := x.Float64()
			a.Real = f
			return a, err
		}
	case []any:
		if t == cli.TypeUUID && len(x) == 2 && x[0] == "uuid" {
			if s, ok := x[1].(string); ok {
				a.Str = s
				return a, nil
			}
		}
	}
	return a, fmt.Errorf("unexpected %v for %s", val, t)
}
