package vsctl

import (
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// getRow finds the record of table ts that id names, as ovs-vsctl does, trying in turn: a
// full UUID, "." for the only row of the table, the table's naming rule (vswitchRowIDRules),
// and a unique UUID prefix of at least 4 characters. The columns cols of the row found are
// loaded, with the same select as the lookup when possible. It returns nil (and no error)
// when nothing matches and mustExist is false.
func getRow(c *Context, ts *dbcmd.TableSchema, id string, mustExist bool, cols ...string) (*dbcmd.Row, error) {
	db, table := c.DB, ts.Name
	var row *dbcmd.Row
	var err error
	if isFullUUID(id) {
		if row, err = db.Get(c.Ctx, table, strings.ToLower(id), cols...); err != nil {
			return nil, err
		}
	}
	if row == nil && id == "." {
		rows, err := db.All(c.Ctx, table, "_uuid")
		if err != nil {
			return nil, err
		}
		if len(rows) == 1 {
			if row, err = db.Get(c.Ctx, table, rows[0].UUID(), cols...); err != nil {
				return nil, err
			}
		}
	}
	if rule, ok := vswitchRowIDRules()[table]; row == nil && ok {
		if row, err = getRowByName(c, ts, rule, id, cols); err != nil {
			return nil, err
		}
	}
	if row == nil && uuidPrefixLen(id) >= 4 {
		rows, err := db.All(c.Ctx, table, "_uuid")
		if err != nil {
			return nil, err
		}
		var found *dbcmd.Row
		for _, r := range rows {
			if !strings.HasPrefix(r.UUID(), id) {
				continue
			}
			if found != nil {
				return nil, Fatalf("%s contains 2 or more rows whose UUIDs begin with %s: at least %s and %s",
					table, id, found.UUID(), r.UUID())
			}
			found = r
		}
		if found != nil {
			if row, err = db.Get(c.Ctx, table, found.UUID(), cols...); err != nil {
				return nil, err
			}
		}
	}
	if row == nil && mustExist {
		return nil, Fatalf("no row \"%s\" in table %s", id, table)
	}
	return row, nil
}

// getRowByName applies a naming rule: one lookup on the name column (fetching cols too, or
// the reference column), then, for a rule with a reference column, the referenced row.
func getRowByName(c *Context, ts *dbcmd.TableSchema, rule rowIDRule, id string, cols []string) (*dbcmd.Row, error) {
	nts := c.Schema.Tables[rule.Table]
	if nts == nil {
		return nil, nil
	}
	ncs := nts.Columns[rule.NameCol]
	if ncs == nil {
		return nil, nil
	}
	var name datum.Atom
	switch ncs.Type.Key.Type {
	case datum.TypeInteger:
		if id == "" || strings.Trim(id, "0123456789") != "" {
			return nil, nil
		}
		name = datum.Atom{Type: datum.TypeInteger, Int: parseDecimalID(id)}
	case datum.TypeString:
		name = datum.Atom{Type: datum.TypeString, Str: id}
	default:
		return nil, nil
	}
	want := cols
	if rule.RefCol != "" {
		want = []string{rule.RefCol}
	}
	rows, err := c.DB.Lookup(c.Ctx, rule.Table, rule.NameCol, datum.Datum{Keys: []datum.Atom{name}}, want...)
	if err != nil {
		return nil, err
	}
	switch {
	case len(rows) > 1:
		return nil, Fatalf("multiple rows in %s match \"%s\"", rule.Table, id)
	case len(rows) == 0:
		return nil, nil
	case rule.RefCol == "":
		return rows[0], nil
	}
	referrer := rows[0]
	if err := referrer.Verify(c.Ctx, rule.RefCol); err != nil {
		return nil, err
	}
	ref, err := referrer.Get(c.Ctx, rule.RefCol)
	if err != nil {
		return nil, err
	}
	if len(ref.Keys) != 1 {
		return nil, nil
	}
	return c.DB.Get(c.Ctx, ts.Name, ref.Keys[0].Str, cols...)
}

// symbolRefs returns the resolver of "@name" references for values of type ct: each name
// becomes a symbol of the invocation (created later or earlier by --id), marked as strongly
// or weakly referred to according to the column's reference type, as ovs-vsctl marks them.
func symbolRefs(syms *Symbols, ct datum.ColumnType) func(string) (string, bool) {
	bt := ct.Key
	if bt.Type != datum.TypeUUID && ct.Value != nil {
		bt = *ct.Value
	}
	return func(name string) (string, bool) {
		if syms == nil {
			return "", false
		}
		sym := syms.Insert(name)
		if bt.RefTable != "" {
			if bt.RefType == "weak" {
				sym.WeakRef = true
			} else {
				sym.StrongRef = true
			}
		}
		return sym.UUID, true
	}
}
