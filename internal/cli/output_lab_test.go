package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Helpers of the output differential test: read the schema's column types, run ovs-vsctl
// with its output untouched, and turn "ovs-vsctl -f json -d json" output back into
// OutputTables.

// outputSchema maps table name, then column name, to the column's type, from the installed
// vswitch schema. "_uuid" is added to every table.
func outputSchema(t *testing.T) map[string]map[string]datum.ColumnType {
	t.Helper()
	raw, err := os.ReadFile(lab.SchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Tables map[string]struct {
			Columns map[string]struct {
				Type json.RawMessage `json:"type"`
			} `json:"columns"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	uuidType := datum.ColumnType{Key: datum.NewBaseType(datum.TypeUUID), Min: 1, Max: 1}
	out := map[string]map[string]datum.ColumnType{}
	for tname, tab := range schema.Tables {
		cols := map[string]datum.ColumnType{"_uuid": uuidType}
		for cname, col := range tab.Columns {
			ct, err := datum.ColumnTypeFromJSON(col.Type)
			if err != nil {
				t.Fatalf("%s.%s: %v", tname, cname, err)
			}
			cols[cname] = ct
		}
		out[tname] = cols
	}
	return out
}

// rawVsctl runs ovs-vsctl against db with args and returns its stdout byte for byte.
func rawVsctl(ctx context.Context, db *lab.OVSDB, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ovs-vsctl", append([]string{"--db=" + db.Endpoint, "--timeout=30"}, args...)...)
	cmd.Env = append(os.Environ(), db.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ovs-vsctl %q: %v: %s", args, err, stderr.String())
	}
	return stdout.String(), nil
}

// tablesFromOVSJSON parses the concatenated output of "ovs-vsctl -f json -d json" for
// commands listing the given tables, one JSON document per table, into OutputTables whose
// cells carry the schema's column types.
func tablesFromOVSJSON(schema map[string]map[string]datum.ColumnType, tables []string, out string) ([]*OutputTable, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.UseNumber()
	var res []*OutputTable
	for _, tname := range tables {
		var doc struct {
			Headings []string
			Data     [][]any
		}
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("table %s: %v", tname, err)
		}
		ot := &OutputTable{Headings: doc.Headings}
		for _, row := range doc.Data {
			if len(row) != len(doc.Headings) {
				return nil, fmt.Errorf("row %v does not match headings %v", row, doc.Headings)
			}
			cells := make([]Cell, len(row))
			for i, v := range row {
				ct, ok := schema[tname][doc.Headings[i]]
				if !ok {
					return nil, fmt.Errorf("no column %s.%s", tname, doc.Headings[i])
				}
				d, err := datumFromOVSJSON(ct, v)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: %v", tname, doc.Headings[i], err)
				}
				cells[i] = Cell{Type: ct, Datum: d}
			}
			ot.Rows = append(ot.Rows, cells)
		}
		res = append(res, ot)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trailing output after %d tables: %v", len(tables), err)
	}
	return res, nil
}

// datumFromOVSJSON converts an RFC 7047 JSON value, decoded with UseNumber, to a datum of
// type ct. Elements are kept in the order given (OVS prints them sorted).
func datumFromOVSJSON(ct datum.ColumnType, v any) (datum.Datum, error) {
	tagged := func(v any, tag string) ([]any, bool) {
		a, ok := v.([]any)
		if !ok || len(a) != 2 || a[0] != tag {
			return nil, false
		}
		elems, ok := a[1].([]any)
		return elems, ok
	}
	var d datum.Datum
	if ct.IsMap() {
		pairs, ok := tagged(v, "map")
		if !ok {
			return d, fmt.Errorf("not a map: %v", v)
		}
		for _, p := range pairs {
			kv, ok := p.([]any)
			if !ok || len(kv) != 2 {
				return d, fmt.Errorf("bad pair %v", p)
			}
			k, err := atomFromOVSJSON(ct.Key.Type, kv[0])
			if err != nil {
				return d, err
			}
			val, err := atomFromOVSJSON(ct.Value.Type, kv[1])
			if err != nil {
				return d, err
			}
			d.Keys = append(d.Keys, k)
			d.Values = append(d.Values, val)
		}
		return d, nil
	}
	elems, ok := tagged(v, "set")
	if !ok {
		elems = []any{v}
	}
	for _, e := range elems {
		a, err := atomFromOVSJSON(ct.Key.Type, e)
		if err != nil {
			return d, err
		}
		d.Keys = append(d.Keys, a)
	}
	return d, nil
}

func atomFromOVSJSON(t datum.AtomicType, v any) (datum.Atom, error) {
	a := datum.Atom{Type: t}
	var err error
	switch t {
	case datum.TypeInteger:
		n, ok := v.(json.Number)
		if !ok {
			return a, fmt.Errorf("not an integer: %v", v)
		}
		a.Int, err = strconv.ParseInt(string(n), 10, 64)
	case datum.TypeReal:
		n, ok := v.(json.Number)
		if !ok {
			return a, fmt.Errorf("not a real: %v", v)
		}
		a.Real, err = strconv.ParseFloat(string(n), 64)
	case datum.TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return a, fmt.Errorf("not a boolean: %v", v)
		}
		a.Bool = b
	case datum.TypeString:
		s, ok := v.(string)
		if !ok {
			return a, fmt.Errorf("not a string: %v", v)
		}
		a.Str = s
	case datum.TypeUUID:
		u, ok := v.([]any)
		if !ok || len(u) != 2 || u[0] != "uuid" {
			return a, fmt.Errorf("not a uuid: %v", v)
		}
		a.Str, ok = u[1].(string)
		if !ok {
			return a, fmt.Errorf("not a uuid: %v", v)
		}
	default:
		return a, fmt.Errorf("bad atomic type %v", t)
	}
	return a, err
}
