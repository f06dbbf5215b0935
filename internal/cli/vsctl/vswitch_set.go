package vsctl

import (
	"encoding/json"
	"strings"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// setColumn applies one COLUMN[:KEY]=VALUE setting (the syntax of the generic "set" command)
// to row, as add-port and add-bond do with their trailing arguments. Errors carry ovs-vsctl's
// wording.
func setColumn(c *Context, row *dbcmd.Row, arg string) error {
	ts := row.Table()
	name, rest, err := scanColumnToken(arg)
	if err != nil {
		return err
	}
	if name == "" {
		return Fatalf("%s: missing column name", arg)
	}
	col, err := matchColumn(ts, name)
	if err != nil {
		return err
	}
	var key string
	hasKey := false
	if strings.HasPrefix(rest, ":") {
		key, rest, err = scanColumnToken(rest[1:])
		if err != nil {
			return err
		}
		hasKey = true
	}
	if !strings.HasPrefix(rest, "=") || len(rest) == 1 {
		return Fatalf("%s: argument does not end in \"=\" followed by a value.", arg)
	}
	value := rest[1:]
	cs := ts.Columns[col]
	refs := func(name string) (string, bool) {
		sym := c.Symbols.Insert(name)
		ref := cs.Type.Key
		if cs.Type.Value != nil && cs.Type.Value.Type == cli.TypeUUID {
			ref = *cs.Type.Value
		}
		if ref.RefType == "weak" {
			sym.WeakRef = true
		} else {
			sym.StrongRef = true
		}
		return sym.UUID, true
	}
	if !hasKey {
		d, err := cli.ParseDatum(cs.Type, value, refs)
		if err != nil {
			return Fatalf("%s", err.Error())
		}
		return row.Set(col, d)
	}
	if !cs.Type.IsMap() {
		return Fatalf("cannot specify key to set for non-map column %s", col)
	}
	k, err := cli.ParseAtom(cs.Type.Key, key, refs)
	if err != nil {
		return Fatalf("%s", err.Error())
	}
	val, err := cli.ParseAtom(*cs.Type.Value, value, refs)
	if err != nil {
		return Fatalf("%s", err.Error())
	}
	cur, err := row.Get(c.Ctx, col)
	if err != nil {
		return err
	}
	keys, vals := []cli.Atom{k}, []cli.Atom{val}
	for i, ck := range cur.Keys {
		if cli.CompareAtoms(ck, k) != 0 {
			keys, vals = append(keys, ck), append(vals, cur.Values[i])
		}
	}
	return row.Set(col, cli.NewDatum(keys, vals))
}

// scanColumnToken reads a column name or key at the start of s: a quoted string, or the
// characters up to the first delimiter.
func scanColumnToken(s string) (tok, rest string, err error) {
	if strings.HasPrefix(s, `"`) {
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '"':
				var out string
				if json.Unmarshal([]byte(s[:j+1]), &out) != nil {
					return "", "", Fatalf("%s: invalid quoted string", s)
				}
				return out, s[j+1:], nil
			}
		}
		return "", "", Fatalf("%s: quoted string extends past end of argument", s)
	}
	i := strings.IndexAny(s, ":=, []{}!<>")
	if i < 0 {
		return s, "", nil
	}
	return s[:i], s[i:], nil
}

// matchColumn finds the column of ts that name designates: an exact name, or an unambiguous
// abbreviation (case-insensitive, '-' matching '_').
func matchColumn(ts *dbcmd.TableSchema, name string) (string, error) {
	best, bestScore := []string(nil), 0
	for _, col := range ts.ColumnNames() {
		score := partialMatch(col, name)
		if score == 0 || score < bestScore {
			continue
		}
		if score > bestScore {
			best = best[:0]
		}
		best, bestScore = append(best, col), score
	}
	switch len(best) {
	case 0:
		return "", Fatalf("%s does not contain a column whose name matches \"%s\"", ts.Name, name)
	case 1:
		return best[0], nil
	}
	return "", Fatalf("%s contains more than one column whose name matches \"%s\": %s", ts.Name, name, strings.Join(best, ", "))
}

func partialMatch(name, s string) int {
	const exact = 1 << 30
	if name == s {
		return exact
	}
	fold := func(c byte) byte {
		if c == '-' {
			return '_'
		}
		if c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	i := 0
	for ; i < len(name) && i < len(s); i++ {
		if fold(name[i]) != fold(s[i]) {
			return 0
		}
	}
	switch {
	case i == len(name) && i == len(s):
		return exact - 1
	case i == len(s):
		return i
	}
	return 0
}
