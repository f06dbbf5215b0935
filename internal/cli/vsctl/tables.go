package vsctl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// rowIDRule says how a record of a table may be named on the command line besides its UUID:
// by the value of NameCol in a row of Table (for a string column, the whole string; for an
// integer column, a decimal number). When RefCol is set, the named row is not the record
// itself: the record is the single row its column RefCol refers to (a bridge's controller,
// for example).
type rowIDRule struct {
	Table, NameCol, RefCol string
}

// vswitchRowIDRules returns the record naming rules of the Open_vSwitch database, by table, as
// ovs-vsctl 3.1 applies them. Tables without a rule are named only by UUID, UUID prefix or ".".
func vswitchRowIDRules() map[string]rowIDRule {
	return map[string]rowIDRule{
		"Bridge":                    {"Bridge", "name", ""},
		"Controller":                {"Bridge", "name", "controller"},
		"Interface":                 {"Interface", "name", ""},
		"Mirror":                    {"Mirror", "name", ""},
		"Manager":                   {"Manager", "target", ""},
		"NetFlow":                   {"Bridge", "name", "netflow"},
		"Port":                      {"Port", "name", ""},
		"QoS":                       {"Port", "name", "qos"},
		"sFlow":                     {"Bridge", "name", "sflow"},
		"Flow_Table":                {"Flow_Table", "name", ""},
		"IPFIX":                     {"Bridge", "name", "ipfix"},
		"AutoAttach":                {"Bridge", "name", "auto_attach"},
		"Flow_Sample_Collector_Set": {"Flow_Sample_Collector_Set", "id", ""},
	}
}

// nameScore tells how well user input s matches the name of a table or column: 0 for not at
// all, the length of s when s is a proper prefix of name (ignoring case, with "-" and "_"
// equivalent), and two top scores for a full match that is exact or only equivalent.
func nameScore(name, s string) int {
	if name == s {
		return math.MaxInt
	}
	norm := func(c byte) byte {
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
		if norm(name[i]) != norm(s[i]) {
			return 0
		}
	}
	switch {
	case i == len(name) && i == len(s):
		return math.MaxInt - 1
	case i == len(s):
		return i
	}
	return 0
}

// bestMatches returns the names (given sorted) that match s best.
func bestMatches(names []string, s string) []string {
	var best []string
	score := 0
	for _, n := range names {
		sc := nameScore(n, s)
		if sc == 0 || sc < score {
			continue
		}
		if sc > score {
			best = best[:0]
			score = sc
		}
		best = append(best, n)
	}
	return best
}

// findTable resolves a table name as typed by the user: case-insensitive, "-" for "_",
// unique prefixes accepted. Errors carry ovs-vsctl's wording.
func findTable(schema *dbcmd.Schema, name string) (*dbcmd.TableSchema, error) {
	m := bestMatches(schema.TableNames(), name)
	switch len(m) {
	case 0:
		return nil, Fatalf("unknown table \"%s\"", name)
	case 1:
		return schema.Tables[m[0]], nil
	}
	return nil, Fatalf("\"%s\" matches multiple table names: %s", name, strings.Join(m, ", "))
}

// findColumn resolves a column name of table ts as findTable resolves table names. The
// implicit columns _uuid and _version are not found, as in ovs-vsctl.
func findColumn(ts *dbcmd.TableSchema, name string) (*dbcmd.ColumnSchema, error) {
	m := bestMatches(ts.ColumnNames(), name)
	switch len(m) {
	case 0:
		return nil, Fatalf("%s does not contain a column whose name matches \"%s\"", ts.Name, name)
	case 1:
		return ts.Columns[m[0]], nil
	}
	return nil, Fatalf("%s contains more than one column whose name matches \"%s\": %s",
		ts.Name, name, strings.Join(m, ", "))
}

// isFullUUID reports whether s is a UUID in 8-4-4-4-12 hexadecimal form (either case).
func isFullUUID(s string) bool {
	return len(s) == 36 && uuidPrefixLen(s) == 36
}

// uuidPrefixLen returns len(s) when s is the beginning of a UUID's 8-4-4-4-12 text form
// (hexadecimal digits of either case where digits go, dashes where dashes go), else 0.
func uuidPrefixLen(s string) int {
	if len(s) > 36 {
		return 0
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return 0
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return 0
		}
	}
	return len(s)
}

// parseDecimalID converts an all-digit record name as C's strtoll does (saturating).
func parseDecimalID(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return v
}

// isArgDelim reports whether c ends a token of a COLUMN[:KEY]... argument.
func isArgDelim(c byte) bool { return strings.IndexByte(":=, []{}!<>", c) >= 0 }

// parseToken reads one token at the start of s, as ovs-vsctl reads column names and keys: up
// to the first delimiter outside double quotes; a backslash makes the next byte literal
// (and is kept inside quotes); quotes are kept. It returns the token and the rest of s.
func parseToken(s string) (tok, rest string, err error) {
	var b strings.Builder
	inQuotes := false
	i := 0
	for i < len(s) {
		c := s[i]
		i++
		switch {
		case c == '\\':
			if inQuotes {
				b.WriteByte('\\')
			}
			if i >= len(s) {
				return "", "", Fatalf("%s: backslash at end of argument", s)
			}
			b.WriteByte(s[i])
			i++
		case !inQuotes && isArgDelim(c):
			return b.String(), s[i-1:], nil
		default:
			b.WriteByte(c)
			if c == '"' {
				inQuotes = !inQuotes
			}
		}
	}
	if inQuotes {
		return "", "", Fatalf("%s: quoted string extends past end of argument", s)
	}
	return b.String(), "", nil
}

// columnArg is a parsed COLUMN[:KEY][OP VALUE] argument.
type columnArg struct {
	Col    *dbcmd.ColumnSchema
	Key    string // raw key text; HasKey tells whether ":" was given
	HasKey bool
	Op     string // the operator, when operators were allowed
	Value  string
}

// parseColumnArg parses arg against table ts. With ops nil, nothing may follow the column and
// key; otherwise one of ops (the longest that matches) must follow, with a non-empty value.
func parseColumnArg(ts *dbcmd.TableSchema, arg string, ops []string) (*columnArg, error) {
	name, p, err := parseToken(arg)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, Fatalf("%s: missing column name", arg)
	}
	cs, err := findColumn(ts, name)
	if err != nil {
		return nil, err
	}
	ca := &columnArg{Col: cs}
	if strings.HasPrefix(p, ":") {
		if ca.Key, p, err = parseToken(p[1:]); err != nil {
			return nil, err
		}
		ca.HasKey = true
	}
	if ops == nil {
		if p != "" {
			return nil, Fatalf("%s: trailing garbage \"%s\" in argument", arg, p)
		}
		return ca, nil
	}
	best := -1
	for i, op := range ops {
		if len(p) > len(op) && strings.HasPrefix(p, op) && (best < 0 || len(op) > len(ops[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil, missingOperator(arg, ops)
	}
	ca.Op, ca.Value = ops[best], p[len(ops[best]):]
	return ca, nil
}

func missingOperator(arg string, ops []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: argument does not end in \"%s\"", arg, ops[0])
	switch {
	case len(ops) == 2:
		fmt.Fprintf(&b, " or \"%s\"", ops[1])
	case len(ops) > 2:
		for _, op := range ops[1 : len(ops)-1] {
			fmt.Fprintf(&b, ", \"%s\"", op)
		}
		fmt.Fprintf(&b, ", or \"%s\"", ops[len(ops)-1])
	}
	b.WriteString(" followed by a value.")
	return &Error{Msg: b.String()}
}

// preColumnArg checks what ovs-vsctl checks of a COLUMN[:KEY]... argument before connecting:
// that it starts with a column name of ts.
func preColumnArg(ts *dbcmd.TableSchema, arg string) error {
	name, _, err := parseToken(arg)
	if err != nil {
		return err
	}
	if name == "" {
		return Fatalf("%s: missing column name", arg)
	}
	_, err = findColumn(ts, name)
	return err
}

// scalarOf is the type of one atom of base type bt.
func scalarOf(bt datum.BaseType) datum.ColumnType { return datum.ColumnType{Key: bt, Min: 1, Max: 1} }

// uuidColumnType is the type of the _uuid column in list and find output.
func uuidColumnType() datum.ColumnType { return scalarOf(datum.NewBaseType(datum.TypeUUID)) }
