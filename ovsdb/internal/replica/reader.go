package replica

import (
	"bytes"
	"encoding/json/jsontext"
	"fmt"
	"strconv"
)

// Limits bounds what one table-updates object may hold (design §3.3). A zero field means its
// default.
type Limits struct {
	Atom        int // bytes of one encoded string or number; default 1 MiB
	Elements    int // elements of one set, or pairs of one map, in one column; default 64 Ki
	BridgePorts int // elements of Bridge.ports; default 1 Mi
	Rows        int // rows of one table; default 1 Mi
	Depth       int // JSON nesting below the table-updates object's start; default 16
}

// Default bounds.
const (
	DefaultAtom        = 1 << 20
	DefaultElements    = 64 << 10
	DefaultBridgePorts = 1 << 20
	DefaultRows        = 1 << 20
	DefaultDepth       = 16
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Atom, DefaultAtom)
	def(&l.Elements, DefaultElements)
	def(&l.BridgePorts, DefaultBridgePorts)
	def(&l.Rows, DefaultRows)
	def(&l.Depth, DefaultDepth)
	return l
}

// atomKind is the type of one OVSDB atom.
type atomKind uint8

const (
	akString atomKind = iota
	akInt
	akReal
	akBool
	akUUID
)

// atom is one decoded atom; s is valid until the reader's next read.
type atom struct {
	s []byte
	n int64
	f float64
	b bool
	u UUID
}

// reader reads the parts of one table-updates object from a jsontext.Decoder, keeping the
// bounds and knowing where it is for error messages.
type reader struct {
	d       *jsontext.Decoder
	lim     Limits
	base    int  // d.StackDepth() before the object
	started bool // the object's '{' was read
	unq     []byte
	kbuf    []byte // a map key's bytes while its value is read

	table, column string
	row           UUID
	hasRow        bool
}

func (r *reader) where() string {
	s := ""
	if r.table != "" {
		s = r.table
		if r.hasRow {
			s += " row " + r.row.String()
		}
		s += ": "
	}
	if r.column != "" {
		s += "column " + r.column + ": "
	}
	return s
}

// malformed returns an error matching ErrMalformed, located at the reader's position.
func (r *reader) malformed(format string, args ...any) error {
	return fmt.Errorf("replica: %s%s: %w", r.where(), fmt.Sprintf(format, args...), ErrMalformed)
}

// decodeErr wraps an error of the decoder itself (syntax, I/O).
func (r *reader) decodeErr(err error) error {
	return fmt.Errorf("replica: %sreading table-updates: %w", r.where(), err)
}

func (r *reader) limit(what string, limit int) *LimitError {
	e := &LimitError{What: what, Table: r.table, Column: r.column, Limit: limit}
	if r.hasRow {
		e.Row = r.row.String()
	}
	return e
}

// resync consumes what is left of the table-updates object after an error, so the decoder
// ends just after it. If the decoder itself failed, it stays failed.
func (r *reader) resync() {
	if !r.started {
		_ = r.d.SkipValue()
		return
	}
	for r.d.StackDepth() > r.base {
		var err error
		switch r.d.PeekKind() {
		case '}', ']':
			_, err = r.d.ReadToken()
		default:
			err = r.d.SkipValue()
		}
		if err != nil {
			return
		}
	}
}

// expect reads one delimiter token of kind k.
func (r *reader) expect(k jsontext.Kind) error {
	if got := r.d.PeekKind(); got != k {
		if got == 0 {
			_, err := r.d.ReadToken()
			return r.decodeErr(err)
		}
		return r.malformed("expected %v, found %v", k, got)
	}
	if _, err := r.d.ReadToken(); err != nil {
		return r.decodeErr(err)
	}
	return nil
}

// value reads one non-composite value of kind k and checks the atom bound.
func (r *reader) value(k jsontext.Kind) (jsontext.Value, error) {
	if got := r.d.PeekKind(); got != k {
		if got == 0 {
			_, err := r.d.ReadToken()
			return nil, r.decodeErr(err)
		}
		return nil, r.malformed("expected %v, found %v", k, got)
	}
	v, err := r.d.ReadValue()
	if err != nil {
		return nil, r.decodeErr(err)
	}
	if len(v) > r.lim.Atom+2 { // the quotes of a string do not count
		return nil, r.limit("atom bytes", r.lim.Atom)
	}
	return v, nil
}

// str reads a string and returns its unquoted bytes, valid until the next read.
func (r *reader) str() ([]byte, error) {
	v, err := r.value('"')
	if err != nil {
		return nil, err
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return body, nil
	}
	r.unq, err = jsontext.AppendUnquote(r.unq[:0], v)
	if err != nil {
		return nil, r.malformed("bad string: %v", err)
	}
	return r.unq, nil
}

// integer reads a JSON number that is an integer in int64's range (RFC 7047: an OVSDB
// integer; ovsdb-server rejects fractions and exponents too).
func (r *reader) integer() (int64, error) {
	v, err := r.value('0')
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, r.malformed("integer expected, found %s", v)
	}
	return n, nil
}

// atom reads one atom of kind k. A uuid is ["uuid", "<text>"].
func (r *reader) atom(k atomKind) (atom, error) {
	var a atom
	var err error
	switch k {
	case akString:
		a.s, err = r.str()
	case akInt:
		a.n, err = r.integer()
	case akReal:
		var v jsontext.Value
		if v, err = r.value('0'); err == nil {
			if a.f, err = strconv.ParseFloat(string(v), 64); err != nil {
				err = r.malformed("real expected, found %s", v)
			}
		}
	case akBool:
		switch r.d.PeekKind() {
		case 't', 'f':
			var t jsontext.Token
			if t, err = r.d.ReadToken(); err != nil {
				return a, r.decodeErr(err)
			}
			a.b = t.Bool()
		default:
			return a, r.malformed("boolean expected, found %v", r.d.PeekKind())
		}
	case akUUID:
		if err = r.expect('['); err != nil {
			return a, err
		}
		var tag []byte
		if tag, err = r.str(); err != nil {
			return a, err
		}
		if string(tag) != "uuid" {
			return a, r.malformed("[\"uuid\", …] expected, found [%q, …]", tag)
		}
		if a.u, err = r.uuidText(); err != nil {
			return a, err
		}
		err = r.expect(']')
	}
	return a, err
}

func (r *reader) uuidText() (UUID, error) {
	s, err := r.str()
	if err != nil {
		return UUID{}, err
	}
	u, ok := parseUUID(s)
	if !ok {
		return UUID{}, r.malformed("bad uuid %q", s)
	}
	return u, nil
}

// set reads a set of atoms of kind k: one bare atom, or ["set", [atom…]]. fn is called for
// each element, with the atom valid during the call. More than max elements is a LimitError
// ("set elements").
func (r *reader) set(k atomKind, max int, fn func(atom) error) error {
	if r.d.PeekKind() != '[' {
		if k == akUUID {
			return r.malformed("uuid or set expected, found %v", r.d.PeekKind())
		}
		a, err := r.atom(k)
		if err != nil {
			return err
		}
		return fn(a)
	}
	if _, err := r.d.ReadToken(); err != nil {
		return r.decodeErr(err)
	}
	tag, err := r.str()
	if err != nil {
		return err
	}
	switch string(tag) {
	case "uuid":
		if k != akUUID {
			return r.malformed("uuid found in a set of another type")
		}
		var a atom
		if a.u, err = r.uuidText(); err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
	case "set":
		if err := r.expect('['); err != nil {
			return err
		}
		for n := 0; r.d.PeekKind() != ']'; n++ {
			if n == max {
				return r.limit("set elements", max)
			}
			a, err := r.atom(k)
			if err != nil {
				return err
			}
			if err := fn(a); err != nil {
				return err
			}
		}
		if err := r.expect(']'); err != nil {
			return err
		}
	default:
		return r.malformed("[\"set\", …] expected, found [%q, …]", tag)
	}
	return r.expect(']')
}

// pairs reads ["map", [[key, value]…]]. fn is called for each pair with both atoms valid
// during the call. More than max pairs is a LimitError ("map pairs").
func (r *reader) pairs(kk, vk atomKind, max int, fn func(k, v atom) error) error {
	if err := r.expect('['); err != nil {
		return err
	}
	tag, err := r.str()
	if err != nil {
		return err
	}
	if string(tag) != "map" {
		return r.malformed("[\"map\", …] expected, found [%q, …]", tag)
	}
	if err := r.expect('['); err != nil {
		return err
	}
	for n := 0; r.d.PeekKind() != ']'; n++ {
		if n == max {
			return r.limit("map pairs", max)
		}
		if err := r.expect('['); err != nil {
			return err
		}
		k, err := r.atom(kk)
		if err != nil {
			return err
		}
		r.kbuf = append(r.kbuf[:0], k.s...) // the value's read reuses the decoder's buffer
		k.s = r.kbuf
		v, err := r.atom(vk)
		if err != nil {
			return err
		}
		if err := fn(k, v); err != nil { // before the next read, which may move v's bytes
			return err
		}
		if err := r.expect(']'); err != nil {
			return err
		}
	}
	if err := r.expect(']'); err != nil {
		return err
	}
	return r.expect(']')
}

// object reads an object, calling fn with each member name (valid until the next read); fn
// must read the member's value.
func (r *reader) object(fn func(name []byte) error) error {
	if err := r.expect('{'); err != nil {
		return err
	}
	for r.d.PeekKind() != '}' {
		name, err := r.str()
		if err != nil {
			return err
		}
		if err := fn(name); err != nil {
			return err
		}
	}
	return r.expect('}')
}

// skip consumes one value the store does not keep, keeping the atom and depth bounds.
func (r *reader) skip() error {
	start := r.d.StackDepth()
	for {
		switch r.d.PeekKind() {
		case '{', '[':
			if _, err := r.d.ReadToken(); err != nil {
				return r.decodeErr(err)
			}
			if r.d.StackDepth()-r.base > r.lim.Depth {
				return r.limit("nesting depth", r.lim.Depth)
			}
		case '}', ']':
			if _, err := r.d.ReadToken(); err != nil {
				return r.decodeErr(err)
			}
		default:
			v, err := r.d.ReadValue()
			if err != nil {
				return r.decodeErr(err)
			}
			if len(v) > r.lim.Atom+2 {
				return r.limit("atom bytes", r.lim.Atom)
			}
		}
		if r.d.StackDepth() == start {
			return nil
		}
	}
}
