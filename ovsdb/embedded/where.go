package embedded

import (
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// Where clauses (RFC 7047 5.1) evaluated on datums, for waits and monitor
// conditions.

// condition is one clause of a where: [column, function, value], or a
// constant (RFC 7047bis allows true and false in monitor conditions).
type condition struct {
	column   string
	function string
	arg      datum.Datum
	constant *bool
}

// parseWhere parses a where clause (a JSON array of conditions) for table ts.
func parseWhere(ts *ovsdb.TableSchema, raw any, names map[string]string) ([]condition, error) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("where clause is not an array")
	}
	out := make([]condition, 0, len(list))
	for _, c := range list {
		if b, ok := c.(bool); ok {
			out = append(out, condition{constant: &b})
			continue
		}
		parts, ok := c.([]any)
		if !ok || len(parts) != 3 {
			return nil, fmt.Errorf("condition %v is not [column, function, value]", c)
		}
		col, _ := parts[0].(string)
		fn, _ := parts[1].(string)
		t, ok := columnType(ts, col)
		if !ok {
			return nil, fmt.Errorf("%v is not a valid column name", parts[0])
		}
		switch fn {
		case "==", "!=", "includes", "excludes":
		case "<", "<=", ">", ">=":
			if (t.Key.Type != datum.TypeInteger && t.Key.Type != datum.TypeReal) || t.IsMap() || t.Max != 1 {
				return nil, fmt.Errorf("type mismatch: %s not supported on column %s", fn, col)
			}
		default:
			return nil, fmt.Errorf("unknown function %v", parts[1])
		}
		arg, err := parseDatum(t, parts[2], names)
		if err != nil {
			return nil, fmt.Errorf("condition on %s: %w", col, err)
		}
		out = append(out, condition{column: col, function: fn, arg: arg})
	}
	return out, nil
}

// matches reports whether r satisfies every condition.
func matches(ts *ovsdb.TableSchema, r row, conds []condition) bool {
	for _, c := range conds {
		if c.constant != nil {
			if !*c.constant {
				return false
			}
			continue
		}
		v := r.get(ts, c.column)
		var ok bool
		switch c.function {
		case "==":
			ok = v.Equal(c.arg)
		case "!=":
			ok = !v.Equal(c.arg)
		case "includes":
			ok = v.Includes(c.arg)
		case "excludes":
			ok = v.Excludes(c.arg)
		default:
			if len(v.Keys) != 1 || len(c.arg.Keys) != 1 {
				return false
			}
			n := datum.CompareAtoms(v.Keys[0], c.arg.Keys[0])
			switch c.function {
			case "<":
				ok = n < 0
			case "<=":
				ok = n <= 0
			case ">":
				ok = n > 0
			case ">=":
				ok = n >= 0
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
