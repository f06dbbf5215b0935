package datum

import (
	"fmt"
	"strconv"
	"strings"
)

// DataStyle selects how FormatDatum renders a datum, as ovs-vsctl's --data option does.
type DataStyle int

// The output styles of ovs-vsctl.
const (
	// DataString is the default: what "ovs-vsctl get" prints; strings quoted only when
	// needed, sets in [], maps in {}, a set of at most one element bare when the column
	// holds at most one.
	DataString DataStyle = iota
	// DataBare is --data=bare: atoms unquoted, separated by spaces, maps as key=value.
	DataBare
	// DataJSON is --data=json: RFC 7047 JSON (["set",…], ["map",…], ["uuid",…]).
	DataJSON
)

// FormatDatum renders d, a datum of type ct, in the given style. It never fails; a datum that
// does not match ct is rendered as far as it goes.
func FormatDatum(ct ColumnType, d Datum, style DataStyle) string {
	switch style {
	case DataBare:
		var b strings.Builder
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(formatAtomBare(k))
			if ct.IsMap() && i < len(d.Values) {
				b.WriteByte('=')
				b.WriteString(formatAtomBare(d.Values[i]))
			}
		}
		return b.String()
	case DataJSON:
		return formatDatumJSON(ct, d)
	}
	return formatDatumString(ct, d)
}

// FormatAtom renders one atom in the given style, as FormatDatum renders each atom of a datum.
func FormatAtom(a Atom, style DataStyle) string {
	switch style {
	case DataBare:
		return formatAtomBare(a)
	case DataJSON:
		return formatAtomJSON(a)
	}
	return formatAtomString(a)
}

func formatDatumString(ct ColumnType, d Datum) string {
	var b strings.Builder
	brackets := ct.Max > 1 || len(d.Keys) == 0
	open, close := "[", "]"
	if ct.IsMap() {
		open, close = "{", "}"
	}
	if brackets {
		b.WriteString(open)
	}
	for i, k := range d.Keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(formatAtomString(k))
		if ct.IsMap() && i < len(d.Values) {
			b.WriteByte('=')
			b.WriteString(formatAtomString(d.Values[i]))
		}
	}
	if brackets {
		b.WriteString(close)
	}
	return b.String()
}

func formatDatumJSON(ct ColumnType, d Datum) string {
	var b strings.Builder
	switch {
	case ct.IsMap():
		b.WriteString(`["map",[`)
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('[')
			b.WriteString(formatAtomJSON(k))
			b.WriteByte(',')
			if i < len(d.Values) {
				b.WriteString(formatAtomJSON(d.Values[i]))
			}
			b.WriteByte(']')
		}
		b.WriteString("]]")
	case len(d.Keys) == 1:
		b.WriteString(formatAtomJSON(d.Keys[0]))
	default:
		b.WriteString(`["set",[`)
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(formatAtomJSON(k))
		}
		b.WriteString("]]")
	}
	return b.String()
}

// formatReal prints r as C's "%.15g" does (Go's 'g' format also writes at least two
// exponent digits, as C does).
func formatReal(r float64) string {
	return strconv.FormatFloat(r, 'g', 15, 64)
}

func formatAtomString(a Atom) string {
	switch a.Type {
	case TypeInteger:
		return strconv.FormatInt(a.Int, 10)
	case TypeReal:
		return formatReal(a.Real)
	case TypeBoolean:
		return strconv.FormatBool(a.Bool)
	case TypeString:
		if stringNeedsQuotes(a.Str) {
			return QuoteJSONString(a.Str)
		}
		return a.Str
	}
	return a.Str
}

func formatAtomBare(a Atom) string {
	if a.Type == TypeString {
		return a.Str
	}
	return formatAtomString(a)
}

func formatAtomJSON(a Atom) string {
	switch a.Type {
	case TypeString:
		return QuoteJSONString(a.Str)
	case TypeUUID:
		return `["uuid",` + QuoteJSONString(a.Str) + "]"
	}
	return formatAtomString(a)
}

// stringNeedsQuotes reports whether ovs-vsctl quotes s in its default output: unless s is an
// identifier-like word (letter or "_", then letters, digits, "_", "-", "."), or when it would
// read back as a boolean, a number or a UUID.
func stringNeedsQuotes(s string) bool {
	if s == "" {
		return true
	}
	c := s[0]
	if !isASCIIAlpha(c) && c != '_' {
		return true
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isASCIIAlpha(c) && !(c >= '0' && c <= '9') && c != '_' && c != '-' && c != '.' {
			return true
		}
	}
	return s == "true" || s == "false" || IsUUID(s)
}

func isASCIIAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// QuoteJSONString writes s as a JSON string literal the way OVS serializes it: only '"', '\\'
// and control characters are escaped; other bytes pass through.
func QuoteJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
