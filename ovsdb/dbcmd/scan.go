package dbcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// scannedRow is one row of a listing decoded by scanRows: its UUID and, for each column of
// the listing (want[i]), its value and whether the server sent one (vals[0] and have[0], for
// _uuid, are unused).
type scannedRow struct {
	uuid string
	vals []datum.Datum
	have []bool
}

// scanRows reads the rows of table from the table-updates2 reply of a one-shot monitor_cond
// (listTable's) straight into datum values, in the order they appear: for each column of want
// (whose schemas are cols, want[0] being _uuid) the value sent, decoded for its type. Columns
// not in want are skipped without being decoded.
//
// Why a hand-written scanner over the bytes rather than encoding/json: that reply is the
// biggest vsctl reads (every Interface or Port of the switch for `show` and `list`), and
// decoding it generically (into map[string]any and []any, then converting each value with
// datumFromJSON) allocated a map per row and a slice per value and cost about a quarter of
// vsctl's time at 5,000 ports. json.Decoder.Token is no better: it allocates a token per
// value. The scanner accepts exactly what that path accepted and yields the same datums
// (FuzzScanRows checks it against the generic path), with these documented differences, all
// on replies ovsdb-server never sends: error texts differ, broken JSON is refused even where
// the generic path stopped reading before the break ("{]"), and a "set" value for a map column
// with elements is an error (the generic path panicked on it).
func scanRows(raw []byte, table string, want []string, cols []*ColumnSchema) ([]scannedRow, error) {
	s := &scanner{b: raw}
	index := make(map[string]int, len(want))
	for i, c := range want[1:] {
		index[c] = i + 1
	}
	s.ws()
	if s.lit("null") {
		return nil, nil
	}
	if !s.eat('{') {
		return nil, errors.New("malformed reply")
	}
	var rows []scannedRow
	err := s.members(func(name string) error {
		if name != table {
			return s.skip(0)
		}
		if !s.eat('{') {
			return errors.New("malformed table update")
		}
		return s.members(func(uuid string) error {
			row, err := s.rowUpdate(len(want), index, cols)
			if err != nil {
				return err
			}
			row.uuid = lowerHex(uuid)
			rows = append(rows, row)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// maxDepth bounds the nesting of arrays and objects, as encoding/json's does.
const maxDepth = 10000

// scanner reads JSON from b at i.
type scanner struct {
	b []byte
	i int
}

var errSyntax = errors.New("malformed JSON in the reply")

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat skips white space, then c if it is next.
func (s *scanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek skips white space and returns the next byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// lit skips white space, then the literal l if it is next.
func (s *scanner) lit(l string) bool {
	s.ws()
	if strings.HasPrefix(string(s.b[s.i:min(len(s.b), s.i+len(l))]), l) {
		s.i += len(l)
		return true
	}
	return false
}

// members reads the members of an object whose '{' has been read, calling f with each name
// with the scanner before the value, which f must consume; it reads the closing '}'.
func (s *scanner) members(f func(name string) error) error {
	if s.eat('}') {
		return nil
	}
	for {
		name, err := s.str()
		if err != nil {
			return err
		}
		if !s.eat(':') {
			return errSyntax
		}
		if err := f(name); err != nil {
			return err
		}
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return nil
		}
		return errSyntax
	}
}

// str reads a string. Without escapes and with valid UTF-8 it is a plain copy of the bytes;
// otherwise encoding/json unquotes it, so that escapes and invalid bytes come out as before.
func (s *scanner) str() (string, error) {
	if s.peek() != '"' {
		return "", errSyntax
	}
	start := s.i
	plain := true
	for j := start + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			if plain {
				return string(s.b[start+1 : j]), nil
			}
			var out string
			if err := json.Unmarshal(s.b[start:j+1], &out); err != nil {
				return "", errSyntax
			}
			return out, nil
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			return "", errSyntax
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(s.b[j:])
			if r == utf8.RuneError && n == 1 {
				plain = false
			}
			j += n - 1
		}
	}
	return "", errSyntax
}

// number reads a JSON number and returns its text.
func (s *scanner) number() (string, bool) {
	s.ws()
	b, i := s.b, s.i
	digits := func() bool {
		k := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > k
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return "", false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return "", false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return "", false
		}
	}
	text := string(b[s.i:i])
	s.i = i
	return text, true
}

// skip reads any value without keeping it.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return errors.New("reply nested too deeply")
	}
	switch s.peek() {
	case '"':
		_, err := s.str()
		return err
	case '{':
		s.i++
		return s.members(func(string) error { return s.skip(depth + 1) })
	case '[':
		s.i++
		return s.elements(func() error { return s.skip(depth + 1) })
	case 't':
		return s.want(s.lit("true"))
	case 'f':
		return s.want(s.lit("false"))
	case 'n':
		return s.want(s.lit("null"))
	}
	_, ok := s.number()
	return s.want(ok)
}

func (s *scanner) want(ok bool) error {
	if !ok {
		return errSyntax
	}
	return nil
}

// elements reads the elements of an array whose '[' has been read, calling f before each
// (which must consume it); it reads the closing ']'.
func (s *scanner) elements(f func() error) error {
	if s.eat(']') {
		return nil
	}
	for {
		if err := f(); err != nil {
			return err
		}
		if s.eat(',') {
			continue
		}
		if s.eat(']') {
			return nil
		}
		return errSyntax
	}
}

// rowUpdate reads one row's <row-update2> object ({"initial": {...}} in an initial reply;
// "insert" is accepted too, "initial" winning when both are present), decoding the columns
// of index. A null row update is a row with every column at its default, as before. Member
// names match case-insensitively and a repeated member merges into the first, as
// encoding/json's decoding into a struct of maps does; a repeated column keeps its last value.
func (s *scanner) rowUpdate(n int, index map[string]int, cols []*ColumnSchema) (scannedRow, error) {
	var row scannedRow
	empty := func() scannedRow { return scannedRow{vals: make([]datum.Datum, n), have: make([]bool, n)} }
	if s.lit("null") {
		return empty(), nil
	}
	if !s.eat('{') {
		return row, errSyntax
	}
	type part struct {
		vals []datum.Datum
		have []bool
		errs []error
	}
	var initial, insert *part
	err := s.members(func(name string) error {
		var p **part
		switch {
		case strings.EqualFold(name, "initial"):
			p = &initial
		case strings.EqualFold(name, "insert"):
			p = &insert
		default:
			return s.skip(1)
		}
		if s.lit("null") {
			*p = nil
			return nil
		}
		if !s.eat('{') {
			return errSyntax
		}
		if *p == nil {
			*p = &part{vals: make([]datum.Datum, n), have: make([]bool, n)}
		}
		q := *p
		return s.members(func(col string) error {
			k, ok := index[col]
			if !ok {
				return s.skip(2)
			}
			d, err := s.datum(cols[k].Type)
			if err != nil && !errors.Is(err, errValue) {
				return err
			}
			q.vals[k], q.have[k] = d, true
			if err != nil {
				if q.errs == nil {
					q.errs = make([]error, n)
				}
				q.errs[k] = err
			} else if q.errs != nil {
				q.errs[k] = nil
			}
			return nil
		})
	})
	if err != nil {
		return row, err
	}
	p := initial
	if p == nil {
		p = insert
	}
	if p == nil {
		return empty(), nil
	}
	for k, err := range p.errs {
		if err != nil {
			return row, fmt.Errorf("column %s: %w", cols[k].Name, err)
		}
	}
	row.vals, row.have = p.vals, p.have
	return row, nil
}

// errValue marks a well-formed JSON value that is not a valid value of its column's type.
var errValue = errors.New("not a valid value for the column's type")

// datum reads one column value of type ct, as datumFromJSON reads it: an atom, ["set", [...]]
// or ["map", [[k, v]...]] (a second element that is not an array being an empty set or map).
// A JSON syntax error is returned as is; a value of the wrong type as errValue, with the
// value consumed.
func (s *scanner) datum(ct datum.ColumnType) (datum.Datum, error) {
	if s.peek() != '[' {
		a, err := s.atom(ct.Key.Type)
		return datum.Datum{Keys: []datum.Atom{a}}, err
	}
	start := s.i
	s.i++
	head := ""
	if s.peek() == '"' {
		h, err := s.str()
		if err != nil {
			return datum.Datum{}, err
		}
		head = h
	}
	if (head != "map" && head != "set") || !s.eat(',') {
		// Not a set or a map: an atom (["uuid", "..."]) or an error.
		s.i = start
		a, err := s.atom(ct.Key.Type)
		return datum.Datum{Keys: []datum.Atom{a}}, err
	}
	var (
		keys, vals []datum.Atom
		bad        error
	)
	if s.peek() != '[' {
		if err := s.skip(3); err != nil {
			return datum.Datum{}, err
		}
		keys = []datum.Atom{}
		if head == "map" {
			vals = []datum.Atom{}
		}
	} else {
		s.i++
		var err error
		if head == "map" {
			vt := ct.Key
			if ct.Value != nil {
				vt = *ct.Value
			}
			vals = []datum.Atom{}
			err = s.elements(func() error {
				// A pair is exactly [key, value]; anything else is skipped (its syntax
				// still checked) and makes the value invalid.
				pairStart := s.i
				paired := false
				if s.eat('[') {
					k, kerr := s.atom(ct.Key.Type)
					if (kerr == nil || errors.Is(kerr, errValue)) && s.eat(',') {
						v, verr := s.atom(vt.Type)
						if (verr == nil || errors.Is(verr, errValue)) && s.eat(']') {
							paired = true
							if kerr != nil || verr != nil {
								bad = errValue
							}
							keys, vals = append(keys, k), append(vals, v)
						}
					}
				}
				if !paired {
					s.i = pairStart
					if err := s.skip(4); err != nil {
						return err
					}
					bad = errValue
				}
				return nil
			})
		} else {
			err = s.elements(func() error {
				k, kerr := s.atom(ct.Key.Type)
				if kerr != nil {
					if !errors.Is(kerr, errValue) {
						return kerr
					}
					bad = errValue
				}
				keys = append(keys, k)
				return nil
			})
		}
		if err != nil {
			return datum.Datum{}, err
		}
		if keys == nil {
			keys = []datum.Atom{}
		}
	}
	if !s.eat(']') {
		// More than two elements: not a set or a map, and no atom either.
		s.i = start
		if err := s.skip(2); err != nil {
			return datum.Datum{}, err
		}
		return datum.Datum{}, errValue
	}
	if bad != nil {
		return datum.Datum{}, bad
	}
	if head == "set" && ct.IsMap() {
		if len(keys) > 0 {
			return datum.Datum{}, errValue
		}
		vals = []datum.Atom{}
	}
	return sortedDatum(keys, vals), nil
}

// sortedDatum is datum.NewDatum(keys, vals) without its copy when the keys already ascend
// strictly, as ovsdb-server sends them (its datums are sorted).
func sortedDatum(keys, vals []datum.Atom) datum.Datum {
	for i := 1; i < len(keys); i++ {
		if datum.CompareAtoms(keys[i-1], keys[i]) >= 0 {
			return datum.NewDatum(keys, vals)
		}
	}
	return datum.Datum{Keys: keys, Values: vals}
}

// atom reads one atom of type t, as atomFromJSON reads it.
func (s *scanner) atom(t datum.AtomicType) (datum.Atom, error) {
	a := datum.Atom{Type: t}
	switch c := s.peek(); {
	case c == '"':
		str, err := s.str()
		if err != nil {
			return a, err
		}
		if t != datum.TypeString {
			return a, errValue
		}
		a.Str = str
		return a, nil
	case c == 't' || c == 'f':
		b := s.lit("true")
		if !b && !s.lit("false") {
			return a, errSyntax
		}
		if t != datum.TypeBoolean {
			return a, errValue
		}
		a.Bool = b
		return a, nil
	case c == '[':
		start := s.i
		s.i++
		if t == datum.TypeUUID && s.peek() == '"' {
			h, err := s.str()
			if err != nil {
				return a, err
			}
			if h == "uuid" && s.eat(',') && s.peek() == '"' {
				u, err := s.str()
				if err != nil {
					return a, err
				}
				if s.eat(']') {
					a.Str = lowerHex(u)
					return a, nil
				}
			}
		}
		s.i = start
		if err := s.skip(3); err != nil {
			return a, err
		}
		return a, errValue
	case c == '-' || (c >= '0' && c <= '9'):
		n, ok := s.number()
		if !ok {
			return a, errSyntax
		}
		switch t {
		case datum.TypeInteger:
			i, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				f, ferr := strconv.ParseFloat(n, 64)
				if ferr != nil || f != math.Trunc(f) {
					return a, errValue
				}
				i = int64(f)
			}
			a.Int = i
			return a, nil
		case datum.TypeReal:
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return a, errValue
			}
			a.Real = f
			return a, nil
		}
		return a, errValue
	}
	if err := s.skip(3); err != nil {
		return a, err
	}
	return a, errValue
}
