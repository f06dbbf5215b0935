package datum

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Atom is one OVSDB atomic value. Only the field for Type is meaningful: Int, Real, Bool, or
// Str (a string, or a UUID in lower-case 8-4-4-4-12 form).
type Atom struct {
	Type AtomicType
	Int  int64
	Real float64
	Bool bool
	Str  string
}

// Datum is an OVSDB value: Keys sorted ascending without duplicates and, for maps, Values
// with Values[i] belonging to Keys[i]. Values is nil for scalars and sets.
type Datum struct {
	Keys   []Atom
	Values []Atom
}

// compareAtoms orders atoms of one type the way OVSDB does (numbers numerically, false before
// true, strings and UUIDs bytewise).
func compareAtoms(a, b Atom) int {
	switch a.Type {
	case TypeInteger:
		return cmp.Compare(a.Int, b.Int)
	case TypeReal:
		return cmp.Compare(a.Real, b.Real)
	case TypeBoolean:
		return cmp.Compare(boolInt(a.Bool), boolInt(b.Bool))
	}
	return strings.Compare(a.Str, b.Str)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sortAtoms(a []Atom) { slices.SortStableFunc(a, compareAtoms) }

// IsUUID reports whether s is a UUID in 8-4-4-4-12 hexadecimal form (either case).
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return false
		}
	}
	return true
}

// maxRangeSize is the largest number of integers a range "a-b" may expand to.
const maxRangeSize = 4096

// isTokenDelim reports whether c ends an unquoted token in ovs-vsctl's value syntax.
func isTokenDelim(c byte) bool {
	return strings.IndexByte(":=, []{}!<>", c) >= 0 // the space is the only blank that ends a token
}

func skipSpaces(s string, i int) int {
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	return i
}

// scanToken reads the token starting at s[i] as ovsdb_token_parse does and returns it with the
// index just after it. The token runs to the first delimiter outside double quotes; a backslash
// outside quotes makes the next character literal (a delimiter included) and is dropped, one
// inside quotes is kept with the character after it; the quotes themselves are kept (tabs and
// newlines do not end a token).
func scanToken(s string, i int) (string, int, error) {
	var out strings.Builder
	inQuotes := false
	j := i
	for j < len(s) {
		c := s[j]
		j++
		switch {
		case c == '\\':
			if inQuotes {
				out.WriteByte('\\')
			}
			if j >= len(s) {
				return "", 0, errors.New(s[i:] + ": backslash at end of argument")
			}
			out.WriteByte(s[j])
			j++
		case !inQuotes && isTokenDelim(c):
			return out.String(), j - 1, nil
		default:
			out.WriteByte(c)
			if c == '"' {
				inQuotes = !inQuotes
			}
		}
	}
	if inQuotes {
		return "", 0, errors.New(s[i:] + ": quoted string extends past end of argument")
	}
	return out.String(), j, nil
}

// ParseDatum parses s, a value in ovs-vsctl's command-line syntax, as a datum of type ct, and
// checks it against ct's constraints. refs resolves "@name" references for uuid atoms (nil
// resolves none). Errors carry ovs-vsctl 3.1's message text, without the "ovs-vsctl: " prefix.
func ParseDatum(ct ColumnType, s string, refs func(name string) (uuid string, ok bool)) (Datum, error) {
	p := skipSpaces(s, 0)
	var endDelim byte
	open, close := byte('['), byte(']')
	if ct.IsMap() {
		open, close = '{', '}'
	}
	switch {
	case p < len(s) && s[p] == open:
		endDelim = close
		p = skipSpaces(s, p+1)
	case p >= len(s):
		if ct.IsMap() {
			return Datum{}, errors.New(`use "{}" to specify the empty map`)
		}
		return Datum{}, errors.New(`use "[]" to specify the empty set`)
	}
	var keys, values []Atom
	for p < len(s) && s[p] != endDelim {
		if isTokenDelim(s[p]) {
			return Datum{}, fmt.Errorf("%s: unexpected \"%s\" parsing %s", s, string(s[p]), ct.English())
		}
		start := p
		var err error
		var key Atom
		var rangeEnd *Atom
		key, rangeEnd, p, err = parseAtomToken(s, p, ct.Key, !ct.IsMap(), refs)
		if err != nil {
			return Datum{}, err
		}
		if ct.IsMap() {
			p = skipSpaces(s, p)
			if p >= len(s) {
				// ovs-vsctl prints the NUL at the end of its string, which ends its message.
				return Datum{}, fmt.Errorf("%s: syntax error at \"", s[start:])
			}
			if s[p] != '=' {
				return Datum{}, fmt.Errorf("%s: syntax error at \"%c\" expecting \"=\"", s[start:], s[p])
			}
			p = skipSpaces(s, p+1)
			var val Atom
			val, _, p, err = parseAtomToken(s, p, *ct.Value, false, refs)
			if err != nil {
				return Datum{}, err
			}
			keys = append(keys, key)
			values = append(values, val)
		} else if rangeEnd != nil {
			for v := key.Int; ; v++ {
				keys = append(keys, Atom{Type: TypeInteger, Int: v})
				if v == rangeEnd.Int {
					break
				}
			}
		} else {
			keys = append(keys, key)
		}
		p = skipSpaces(s, p)
		if p < len(s) && s[p] == ',' {
			p = skipSpaces(s, p+1)
		}
	}
	if endDelim != 0 {
		if p >= len(s) {
			return Datum{}, fmt.Errorf("%s: missing \"%s\" at end of data", s, string(endDelim))
		}
		p = skipSpaces(s, p+1)
		if p < len(s) {
			return Datum{}, fmt.Errorf("%s: trailing garbage after \"%s\"", s, string(endDelim))
		}
	}
	d, err := SortUnique(keys, values, ct.IsMap())
	if err != nil {
		return Datum{}, fmt.Errorf("%s: %w", s, err)
	}
	if n := uint64(len(d.Keys)); n < ct.Min {
		return Datum{}, fmt.Errorf("%s: %d value(s) specified but the minimum number is %d", s, n, ct.Min)
	} else if n > ct.Max {
		return Datum{}, fmt.Errorf("%s: %d value(s) specified but the maximum number is %d", s, n, ct.Max)
	}
	return d, nil
}

// DuplicateError is SortUnique's error: Key occurs twice in a set, or as two keys of a map
// (Map). Its message is ovs-vsctl's.
type DuplicateError struct {
	Key Atom
	Map bool
}

func (e *DuplicateError) Error() string {
	if e.Map {
		return "map contains duplicate key"
	}
	return "set contains duplicate value"
}

// SortUnique returns the datum of keys (and, when isMap, of values alongside, which must be as
// long as keys), sorted by key. Unlike NewDatum it refuses duplicate keys, as OVSDB refuses them
// in a value it is sent: the error is a *DuplicateError naming the first duplicate in sorted
// order. For a map the result's Values is never nil.
func SortUnique(keys, values []Atom, isMap bool) (Datum, error) {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return compareAtoms(keys[a], keys[b]) })
	d := Datum{Keys: make([]Atom, len(keys))}
	if isMap {
		d.Values = make([]Atom, len(keys))
	}
	for i, j := range idx {
		d.Keys[i] = keys[j]
		if isMap {
			d.Values[i] = values[j]
		}
		if i > 0 && compareAtoms(d.Keys[i-1], d.Keys[i]) == 0 {
			return Datum{}, &DuplicateError{Key: d.Keys[i], Map: isMap}
		}
	}
	return d, nil
}

// ParseAtom parses s as one atom of type bt, the way ovs-vsctl parses the KEY or the VALUE of
// COLUMN:KEY=VALUE: the whole of s is the atom (so "b c" and "b}" are strings as they stand),
// quoted strings are JSON-unescaped, integer ranges are not allowed, and bt's constraints are
// enforced. Errors carry ovs-vsctl 3.1's message text.
func ParseAtom(bt BaseType, s string, refs func(name string) (uuid string, ok bool)) (Atom, error) {
	a, _, err := atomFromString(bt, s, false, refs)
	if err != nil {
		return Atom{}, err
	}
	if err := checkAtom(bt, a); err != nil {
		return Atom{}, err
	}
	return a, nil
}

// parseAtomToken parses the token at s[i:] as an atom of type bt and returns it, the range end
// when allowRange and the token is an integer range, and the index after the token.
func parseAtomToken(s string, i int, bt BaseType, allowRange bool,
	refs func(string) (string, bool)) (Atom, *Atom, int, error) {
	tok, end, err := scanToken(s, i)
	if err != nil {
		return Atom{}, nil, 0, err
	}
	a, rng, err := atomFromString(bt, tok, allowRange, refs)
	if err != nil {
		return Atom{}, nil, 0, err
	}
	if err := checkAtom(bt, a); err != nil {
		return Atom{}, nil, 0, err
	}
	if rng != nil {
		if err := checkAtom(bt, *rng); err != nil {
			return Atom{}, nil, 0, err
		}
		if rng.Int-a.Int >= maxRangeSize || rng.Int-a.Int < 0 {
			//lint:ignore ST1005 ovs-vsctl's exact wording, which scripts may match
			return Atom{}, nil, 0, fmt.Errorf("constraint violation: Range \"%s\" is too big. Maximum allowed size is %d.", tok, maxRangeSize)
		}
	}
	return a, rng, end, nil
}

func atomFromString(bt BaseType, tok string, allowRange bool, refs func(string) (string, bool)) (Atom, *Atom, error) {
	switch bt.Type {
	case TypeInteger:
		if v, ok := ParseCLong(tok); ok {
			return Atom{Type: TypeInteger, Int: v}, nil, nil
		}
		if allowRange {
			if k := strings.IndexByte(tok[min(1, len(tok)):], '-'); k >= 0 {
				k++
				a, ok1 := ParseCLong(tok[:k])
				b, ok2 := ParseCLong(tok[k+1:])
				if ok1 && ok2 && !strings.ContainsAny(tok[k+1:k+2], " \t") {
					if b < a {
						//lint:ignore ST1005 ovs-vsctl's exact wording, which scripts may match
						return Atom{}, nil, fmt.Errorf("\"%s\" is not a valid range. Range end cannot be before start.", tok)
					}
					return Atom{Type: TypeInteger, Int: a}, &Atom{Type: TypeInteger, Int: b}, nil
				}
			}
		}
		return Atom{}, nil, fmt.Errorf("\"%s\" is not a valid integer or range", tok)
	case TypeReal:
		v, err := strconv.ParseFloat(tok, 64)
		if err != nil || strings.ContainsAny(tok, "xXnN_") || math.IsInf(v, 0) {
			return Atom{}, nil, fmt.Errorf("\"%s\" is not a valid real number", tok)
		}
		return Atom{Type: TypeReal, Real: v}, nil, nil
	case TypeBoolean:
		switch tok {
		case "true", "yes", "on", "1":
			return Atom{Type: TypeBoolean, Bool: true}, nil, nil
		case "false", "no", "off", "0":
			return Atom{Type: TypeBoolean}, nil, nil
		}
		return Atom{}, nil, fmt.Errorf("\"%s\" is not a valid boolean (use \"true\" or \"false\")", tok)
	case TypeString:
		if tok == "" {
			//lint:ignore ST1005 ovs-vsctl's exact wording, which scripts may match
			return Atom{}, nil, errors.New(`An empty string is not valid as input; use "" to represent the empty string`)
		}
		if tok[0] != '"' {
			return Atom{Type: TypeString, Str: tok}, nil, nil
		}
		if len(tok) < 2 || tok[len(tok)-1] != '"' {
			return Atom{}, nil, fmt.Errorf("%s: missing quote at end of quoted string", tok)
		}
		str, err := unescapeJSONString(tok[1 : len(tok)-1])
		if err != nil {
			return Atom{}, nil, fmt.Errorf("%s: %w", tok, err)
		}
		return Atom{Type: TypeString, Str: str}, nil, nil
	case TypeUUID:
		if strings.HasPrefix(tok, "@") {
			if refs != nil {
				if u, ok := refs(tok); ok && IsUUID(u) {
					return Atom{Type: TypeUUID, Str: strings.ToLower(u)}, nil, nil
				}
			}
			return Atom{}, nil, fmt.Errorf("row id \"%s\" is referenced but never created (e.g. with \"-- --id=%s create ...\")", tok, tok)
		}
		if !IsUUID(tok) {
			return Atom{}, nil, fmt.Errorf("\"%s\" is not a valid UUID", tok)
		}
		return Atom{Type: TypeUUID, Str: strings.ToLower(tok)}, nil, nil
	}
	return Atom{}, nil, fmt.Errorf("invalid atomic type %d", int(bt.Type))
}

// checkAtom enforces bt's constraints on a, with ovs-vsctl's messages.
func checkAtom(bt BaseType, a Atom) error {
	if bt.Enum != nil {
		for _, e := range bt.Enum {
			if compareAtoms(e, a) == 0 {
				return nil
			}
		}
		enum := formatDatumString(ColumnType{Key: bt, Max: MaxUnlimited}, Datum{Keys: bt.Enum})
		return fmt.Errorf("constraint violation: %s is not one of the allowed values (%s)", formatAtomString(a), enum)
	}
	switch bt.Type {
	case TypeInteger:
		lo, hi := bt.MinInteger, bt.MaxInteger
		switch {
		case a.Int >= lo && a.Int <= hi:
		case lo == math.MinInt64:
			return fmt.Errorf("constraint violation: %d is greater than maximum allowed value %d", a.Int, hi)
		case hi == math.MaxInt64:
			return fmt.Errorf("constraint violation: %d is less than minimum allowed value %d", a.Int, lo)
		default:
			return fmt.Errorf("constraint violation: %d is not in the valid range %d to %d (inclusive)", a.Int, lo, hi)
		}
	case TypeReal:
		lo, hi := bt.MinReal, bt.MaxReal
		switch {
		case a.Real >= lo && a.Real <= hi:
		case lo == -math.MaxFloat64:
			return fmt.Errorf("constraint violation: %s is greater than maximum allowed value %s", formatReal(a.Real), formatReal(hi))
		case hi == math.MaxFloat64:
			return fmt.Errorf("constraint violation: %s is less than minimum allowed value %s", formatReal(a.Real), formatReal(lo))
		default:
			return fmt.Errorf("constraint violation: %s is not in the valid range %s to %s (inclusive)", formatReal(a.Real), formatReal(lo), formatReal(hi))
		}
	case TypeString:
		if bad := invalidUTF8(a.Str); bad != "" {
			return fmt.Errorf("constraint violation: not a valid UTF-8 string: invalid UTF-8 sequence%s", bad)
		}
		n := uint64(utf8RuneCount(a.Str))
		if n < bt.MinLength {
			return fmt.Errorf("constraint violation: \"%s\" length %d is less than minimum allowed length %d", a.Str, n, bt.MinLength)
		}
		if n > bt.MaxLength {
			return fmt.Errorf("constraint violation: \"%s\" length %d is greater than maximum allowed length %d", a.Str, n, bt.MaxLength)
		}
	}
	return nil
}
