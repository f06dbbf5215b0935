package cli

import (
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// Table output
//
// ovs-vsctl prints the results of list and find (and of any other command that produces a
// table) through one formatter that knows five layouts, selected by --format, and three ways
// of rendering a cell, selected by --data. This file reproduces that formatter byte for byte;
// the rules below were checked against the ovs-vsctl 3.1 binary (output_test.go).
//
// Cell text. With --data=string a cell is what "ovs-vsctl get" prints, with --data=bare the
// space-separated atoms, with --data=json its compact RFC 7047 JSON (FormatDatum). The json
// format ignores --data: its cells are always JSON values.
//
// Lengths are counted in bytes, never in characters: a column holding "é" is one byte wider
// than it looks, and --max-column-width may cut a multi-byte character in two, as ovs-vsctl
// does.

// TableFormat is the layout of a table, as chosen by ovs-vsctl's --format (-f).
type TableFormat int

// The table formats. The zero value, FormatList, is ovs-vsctl's default.
const (
	// FormatList prints one "heading : value" line per cell and an empty line between
	// records.
	FormatList TableFormat = iota
	// FormatTable prints aligned columns under a heading line and a line of dashes.
	FormatTable
	// FormatHTML prints an HTML <table>.
	FormatHTML
	// FormatCSV prints comma-separated lines.
	FormatCSV
	// FormatJSON prints one JSON object {"data":[...],"headings":[...]}.
	FormatJSON
)

// String returns the --format argument that selects f ("list", "table", "html", "csv",
// "json"), or "invalid".
func (f TableFormat) String() string {
	switch f {
	case FormatList:
		return "list"
	case FormatTable:
		return "table"
	case FormatHTML:
		return "html"
	case FormatCSV:
		return "csv"
	case FormatJSON:
		return "json"
	}
	return "invalid"
}

// TableStyle is how tables are printed. The zero value is ovs-vsctl's default: list format,
// string cells, headings, compact JSON, no width limit.
type TableStyle struct {
	// Format is the layout (--format).
	Format TableFormat
	// Data is how cells are rendered (--data). FormatJSON ignores it.
	Data datum.DataStyle
	// NoHeadings drops the headings (--no-headings): the "name : " prefixes of FormatList,
	// the heading and dash lines of FormatTable, the heading row of FormatHTML and FormatCSV.
	// FormatJSON keeps its "headings" member regardless.
	NoHeadings bool
	// Pretty indents the output of FormatJSON (--pretty); other formats ignore it, even for
	// cells rendered with DataJSON.
	Pretty bool
	// MaxColumnWidth, when positive, limits the width of FormatTable's columns in bytes
	// (--max-column-width); longer cells are cut. A heading is never cut: a column is at
	// least as wide as its heading. Other formats ignore it.
	MaxColumnWidth int
}

// TableStyleFromOptions returns the table style selected by the global options -f, -d,
// --no-headings, --pretty, --bare and --max-column-width. Unset or unknown Format and Data
// mean the defaults, "list" and "string" (Parse rejects unknown names before this point).
func TableStyleFromOptions(o Options) TableStyle {
	var s TableStyle
	switch o.Format {
	case "table":
		s.Format = FormatTable
	case "html":
		s.Format = FormatHTML
	case "csv":
		s.Format = FormatCSV
	case "json":
		s.Format = FormatJSON
	}
	switch o.Data {
	case "bare":
		s.Data = datum.DataBare
	case "json":
		s.Data = datum.DataJSON
	}
	s.NoHeadings = o.NoHeadings
	s.Pretty = o.Pretty
	if o.HasMaxColumnWidth {
		s.MaxColumnWidth = o.MaxColumnWidth
	}
	return s
}

// Cell is one value of a table with the type of its column; it is rendered according to the
// table style. Datum must be valid for Type (sorted keys, element count within Type's
// bounds), as data read from the database always is.
type Cell struct {
	Type  datum.ColumnType
	Datum datum.Datum
}

// OutputTable is a table as list and find produce it: column headings and rows of cells.
// Every row must have one cell per heading.
type OutputTable struct {
	// Caption, when not empty, is printed above the table (the "caption" member in JSON).
	// ovs-vsctl's own commands never set one.
	Caption string
	// Headings are the column names, in column order (for list and find, the column names;
	// the UUID column is "_uuid", which FormatHTML turns into an anchor).
	Headings []string
	// Rows are the records, each with one cell per heading.
	Rows [][]Cell
}

// Render returns the bytes ovs-vsctl prints for t when it is the first table of the
// invocation. Use a TableWriter when a command line produces several tables.
func (t *OutputTable) Render(style TableStyle) string {
	var w TableWriter
	return w.Render(t, style)
}

// TableWriter renders the successive tables of one invocation. ovs-vsctl prints an empty line
// before every table but the first in the list, table and csv formats (whatever output of
// other commands comes in between, and even when that table has no rows); html and json
// tables are printed back to back. The zero value is ready for the first table.
type TableWriter struct {
	started bool
}

// Render returns the bytes ovs-vsctl prints for t in the given style, including the empty
// line that separates it from an earlier table.
func (w *TableWriter) Render(t *OutputTable, style TableStyle) string {
	var b strings.Builder
	switch style.Format {
	case FormatTable, FormatList, FormatCSV:
		if w.started {
			b.WriteByte('\n')
		}
		w.started = true
		if t.Caption != "" {
			b.WriteString(t.Caption)
			b.WriteByte('\n')
		}
	}
	switch style.Format {
	case FormatTable:
		t.renderTable(&b, style)
	case FormatList:
		t.renderList(&b, style)
	case FormatCSV:
		t.renderCSV(&b, style)
	case FormatHTML:
		t.renderHTML(&b, style)
	case FormatJSON:
		t.renderJSON(&b, style)
	}
	return b.String()
}

// texts renders every cell of t once, in the style's data format.
func (t *OutputTable) texts(style TableStyle) [][]string {
	out := make([][]string, len(t.Rows))
	for y, row := range t.Rows {
		out[y] = make([]string, len(t.Headings))
		for x := range t.Headings {
			if x < len(row) {
				out[y][x] = datum.FormatDatum(row[x].Type, row[x].Datum, style.Data)
			}
		}
	}
	return out
}

// listHeadingWidth is the width FormatList pads headings to; longer headings are not cut.
const listHeadingWidth = 20

func (t *OutputTable) renderList(b *strings.Builder, style TableStyle) {
	for y, row := range t.texts(style) {
		if y > 0 {
			b.WriteByte('\n')
		}
		for x, text := range row {
			if !style.NoHeadings {
				h := t.Headings[x]
				b.WriteString(h)
				for i := len(h); i < listHeadingWidth; i++ {
					b.WriteByte(' ')
				}
				b.WriteString(": ")
			}
			b.WriteString(text)
			b.WriteByte('\n')
		}
	}
}

// renderTable lays the cells out in columns as wide as their widest cell (capped by
// MaxColumnWidth, then raised to the heading's width), separated by one space, with every
// cell padded or cut to its column's width and trailing spaces removed from each line.
func (t *OutputTable) renderTable(b *strings.Builder, style TableStyle) {
	texts := t.texts(style)
	widths := make([]int, len(t.Headings))
	for x, h := range t.Headings {
		w := 0
		for _, row := range texts {
			w = max(w, len(row[x]))
		}
		if style.MaxColumnWidth > 0 && w > style.MaxColumnWidth {
			w = style.MaxColumnWidth
		}
		if !style.NoHeadings {
			w = max(w, len(h))
		}
		widths[x] = w
	}
	var line strings.Builder
	emit := func() {
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
		line.Reset()
	}
	cell := func(x int, s string) {
		if x > 0 {
			line.WriteByte(' ')
		}
		if len(s) > widths[x] {
			s = s[:widths[x]]
		}
		line.WriteString(s)
		line.WriteString(strings.Repeat(" ", widths[x]-len(s)))
	}
	if !style.NoHeadings {
		for x, h := range t.Headings {
			cell(x, h)
		}
		emit()
		for x := range t.Headings {
			cell(x, strings.Repeat("-", widths[x]))
		}
		emit()
	}
	for _, row := range texts {
		for x, s := range row {
			cell(x, s)
		}
		emit()
	}
}

// csvField quotes s when it holds a comma, a double quote or a newline, doubling its quotes.
func csvField(s string) string {
	if !strings.ContainsAny(s, "\n\",") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func (t *OutputTable) renderCSV(b *strings.Builder, style TableStyle) {
	line := func(fields []string) {
		for x, f := range fields {
			if x > 0 {
				b.WriteByte(',')
			}
			b.WriteString(csvField(f))
		}
		b.WriteByte('\n')
	}
	if !style.NoHeadings {
		line(t.Headings)
	}
	for _, row := range t.texts(style) {
		line(row)
	}
}

// htmlEscape escapes the four characters ovs-vsctl escapes in HTML output: & < > and ".
// The apostrophe is left as it is.
func htmlEscape(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteByte(c)
		}
	}
}

// uuidLen is the length of a UUID in 8-4-4-4-12 form.
const uuidLen = 36

// htmlCell writes one <element> line. Everything in content that looks like a UUID (either
// case of hex digits, even inside a longer word) becomes a link to that UUID's anchor, shown
// as its first 8 characters; the rest is escaped.
func htmlCell(b *strings.Builder, element, content string) {
	b.WriteString("    <" + element + ">")
	for i := 0; i < len(content); {
		if len(content)-i >= uuidLen && datum.IsUUID(content[i:i+uuidLen]) {
			u := content[i : i+uuidLen]
			b.WriteString(`<a href="#` + u + `">` + u[:8] + "</a>")
			i += uuidLen
			continue
		}
		htmlEscape(b, content[i:i+1])
		i++
	}
	b.WriteString("</" + element + ">\n")
}

// renderHTML writes a <table border=1>. A column headed "_uuid" holds anchors (<a name=...>
// showing the first 8 bytes of the cell) that the links of other cells point to.
func (t *OutputTable) renderHTML(b *strings.Builder, style TableStyle) {
	b.WriteString("<table border=1>\n")
	if t.Caption != "" {
		htmlCell(b, "caption", t.Caption)
	}
	if !style.NoHeadings {
		b.WriteString("  <tr>\n")
		for _, h := range t.Headings {
			htmlCell(b, "th", h)
		}
		b.WriteString("  </tr>\n")
	}
	for _, row := range t.texts(style) {
		b.WriteString("  <tr>\n")
		for x, text := range row {
			if t.Headings[x] != "_uuid" {
				htmlCell(b, "td", text)
				continue
			}
			b.WriteString(`    <td><a name="`)
			htmlEscape(b, text)
			b.WriteString(`">`)
			htmlEscape(b, text[:min(8, len(text))])
			b.WriteString("</a></td>\n")
		}
		b.WriteString("  </tr>\n")
	}
	b.WriteString("</table>\n")
}

// renderJSON writes {"caption":…,"data":[[cell,…],…],"headings":[…]} (members in that
// order, caption only when set), cells as RFC 7047 JSON whatever the data style. With Pretty,
// every array element and object member goes on its own line, indented by two spaces per
// level, and closing brackets follow the last element on its line.
func (t *OutputTable) renderJSON(b *strings.Builder, style TableStyle) {
	w := jsonWriter{b: b, pretty: style.Pretty}
	w.open('{')
	if t.Caption != "" {
		w.member(0, "caption")
		b.WriteString(datum.QuoteJSONString(t.Caption))
	}
	n := 0
	if t.Caption != "" {
		n = 1
	}
	w.member(n, "data")
	w.array(len(t.Rows), func(y int) {
		w.array(len(t.Headings), func(x int) {
			if x < len(t.Rows[y]) {
				c := t.Rows[y][x]
				w.datum(c.Type, c.Datum)
			} else {
				b.WriteString("null")
			}
		})
	})
	w.member(n+1, "headings")
	w.array(len(t.Headings), func(x int) { b.WriteString(datum.QuoteJSONString(t.Headings[x])) })
	w.close('}')
	b.WriteByte('\n')
}

// jsonWriter writes JSON as OVS serializes it, compact or indented.
type jsonWriter struct {
	b      *strings.Builder
	pretty bool
	depth  int
}

// newline starts a new indented line when pretty-printing.
func (w *jsonWriter) newline() {
	if w.pretty {
		w.b.WriteByte('\n')
		w.b.WriteString(strings.Repeat("  ", w.depth))
	}
}

// open starts an object ('{') or array ('[').
func (w *jsonWriter) open(c byte) {
	w.b.WriteByte(c)
	w.depth++
}

// close ends what open started.
func (w *jsonWriter) close(c byte) {
	w.depth--
	w.b.WriteByte(c)
}

// member starts the i'th member of an object: a pretty object puts even its first member on
// a new line, and a space after the colon.
func (w *jsonWriter) member(i int, name string) {
	if i > 0 {
		w.b.WriteByte(',')
	}
	w.newline()
	w.b.WriteString(datum.QuoteJSONString(name))
	w.b.WriteByte(':')
	if w.pretty {
		w.b.WriteByte(' ')
	}
}

// array writes an array of n elements, elem(i) writing element i; an empty array is "[]".
func (w *jsonWriter) array(n int, elem func(i int)) {
	w.open('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			w.b.WriteByte(',')
		}
		w.newline()
		elem(i)
	}
	w.close(']')
}

// datum writes d as RFC 7047 JSON: a map as ["map",[[k,v],…]], a single element as the bare
// atom, anything else as ["set",[…]].
func (w *jsonWriter) datum(ct datum.ColumnType, d datum.Datum) {
	switch {
	case ct.IsMap():
		w.wrapped("map", len(d.Keys), func(i int) {
			w.array(2, func(j int) {
				if j == 0 {
					w.atom(d.Keys[i])
				} else if i < len(d.Values) {
					w.atom(d.Values[i])
				}
			})
		})
	case len(d.Keys) == 1:
		w.atom(d.Keys[0])
	default:
		w.wrapped("set", len(d.Keys), func(i int) { w.atom(d.Keys[i]) })
	}
}

// wrapped writes [tag,[elements…]].
func (w *jsonWriter) wrapped(tag string, n int, elem func(i int)) {
	w.array(2, func(j int) {
		if j == 0 {
			w.b.WriteString(datum.QuoteJSONString(tag))
		} else {
			w.array(n, elem)
		}
	})
}

func (w *jsonWriter) atom(a datum.Atom) {
	if a.Type == datum.TypeUUID {
		w.array(2, func(j int) {
			if j == 0 {
				w.b.WriteString(`"uuid"`)
			} else {
				w.b.WriteString(datum.QuoteJSONString(a.Str))
			}
		})
		return
	}
	w.b.WriteString(datum.FormatAtom(a, datum.DataJSON))
}
