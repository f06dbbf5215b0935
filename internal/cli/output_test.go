package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Test helpers building cells by hand.

var (
	outStrType   = datum.ColumnType{Key: datum.NewBaseType(datum.TypeString), Min: 1, Max: 1}
	outIntSet    = datum.ColumnType{Key: datum.NewBaseType(datum.TypeInteger), Min: 0, Max: datum.MaxUnlimited}
	outOptInt    = datum.ColumnType{Key: datum.NewBaseType(datum.TypeInteger), Min: 0, Max: 1}
	outRealType  = datum.ColumnType{Key: datum.NewBaseType(datum.TypeReal), Min: 1, Max: 1}
	outBoolType  = datum.ColumnType{Key: datum.NewBaseType(datum.TypeBoolean), Min: 1, Max: 1}
	outUUIDType  = datum.ColumnType{Key: datum.NewBaseType(datum.TypeUUID), Min: 1, Max: 1}
	outUUIDSet   = datum.ColumnType{Key: datum.NewBaseType(datum.TypeUUID), Min: 0, Max: datum.MaxUnlimited}
	outStrMapVal = datum.NewBaseType(datum.TypeString)
	outStrMap    = datum.ColumnType{Key: datum.NewBaseType(datum.TypeString), Value: &outStrMapVal, Min: 0, Max: datum.MaxUnlimited}
)

func strCell(s string) Cell {
	return Cell{Type: outStrType, Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeString, Str: s}}}}
}

func intSetCell(ns ...int64) Cell {
	var d datum.Datum
	for _, n := range ns {
		d.Keys = append(d.Keys, datum.Atom{Type: datum.TypeInteger, Int: n})
	}
	return Cell{Type: outIntSet, Datum: d}
}

func uuidCell(u string) Cell {
	return Cell{Type: outUUIDType, Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeUUID, Str: u}}}}
}

func strMapCell(kv ...string) Cell {
	var d datum.Datum
	for i := 0; i+1 < len(kv); i += 2 {
		d.Keys = append(d.Keys, datum.Atom{Type: datum.TypeString, Str: kv[i]})
		d.Values = append(d.Values, datum.Atom{Type: datum.TypeString, Str: kv[i+1]})
	}
	return Cell{Type: outStrMap, Datum: d}
}

const outUUID = "01234567-89ab-cdef-0123-456789abcdef"

// outSample is a two-row table with a string, a map, a set and a UUID column.
func outSample() *OutputTable {
	return &OutputTable{
		Headings: []string{"name", "external_ids", "trunks", "_uuid"},
		Rows: [][]Cell{
			{strCell("p1"), strMapCell("a", "x y", "b", "1,2"), intSetCell(1, 2), uuidCell(outUUID)},
			{strCell("a<b>&\"c\""), strMapCell(), intSetCell(), uuidCell("fedcba98-7654-3210-fedc-ba9876543210")},
		},
	}
}

func TestOutputFormats(t *testing.T) {
	tests := []struct {
		name  string
		table *OutputTable
		style TableStyle
		want  string
	}{
		{"list", outSample(), TableStyle{}, "" +
			"name                : p1\n" +
			"external_ids        : {a=\"x y\", b=\"1,2\"}\n" +
			"trunks              : [1, 2]\n" +
			"_uuid               : " + outUUID + "\n" +
			"\n" +
			"name                : \"a<b>&\\\"c\\\"\"\n" +
			"external_ids        : {}\n" +
			"trunks              : []\n" +
			"_uuid               : fedcba98-7654-3210-fedc-ba9876543210\n"},
		{"list bare no headings", outSample(), TableStyle{Data: datum.DataBare, NoHeadings: true}, "" +
			"p1\na=x y b=1,2\n1 2\n" + outUUID + "\n\n" +
			"a<b>&\"c\"\n\n\nfedcba98-7654-3210-fedc-ba9876543210\n"},
		{"list long heading", &OutputTable{Headings: []string{"ingress_policing_burst_x"}, Rows: [][]Cell{{intSetCell(0)}}},
			TableStyle{}, "ingress_policing_burst_x: [0]\n"},
		{"table", outSample(), TableStyle{Format: FormatTable}, "" +
			"name         external_ids       trunks _uuid\n" +
			"------------ ------------------ ------ ------------------------------------\n" +
			"p1           {a=\"x y\", b=\"1,2\"} [1, 2] " + outUUID + "\n" +
			"\"a<b>&\\\"c\\\"\" {}                 []     fedcba98-7654-3210-fedc-ba9876543210\n"},
		{"table max width", outSample(), TableStyle{Format: FormatTable, MaxColumnWidth: 5}, "" +
			"name  external_ids trunks _uuid\n" +
			"----- ------------ ------ -----\n" +
			"p1    {a=\"x y\", b= [1, 2] 01234\n" +
			"\"a<b> {}           []     fedcb\n"},
		{"table max width no headings", outSample(), TableStyle{Format: FormatTable, MaxColumnWidth: 3, NoHeadings: true}, "" +
			"p1  {a= [1, 012\n" +
			"\"a< {}  []  fed\n"},
		{"table negative max width", &OutputTable{Headings: []string{"x"}, Rows: [][]Cell{{strCell("abcdef")}}},
			TableStyle{Format: FormatTable, MaxColumnWidth: -1}, "x\n------\nabcdef\n"},
		// Widths are in bytes: "é" is two bytes wide, and a cut may split it.
		{"table bytes", &OutputTable{Headings: []string{"x", "y"}, Rows: [][]Cell{{strCell("é"), strCell("z")}}},
			TableStyle{Format: FormatTable, Data: datum.DataBare, MaxColumnWidth: 1, NoHeadings: true}, "\xc3 z\n"},
		{"table trailing spaces", &OutputTable{Headings: []string{"a", "b"}, Rows: [][]Cell{{strCell("x  "), strCell("  ")}, {strCell(""), strCell("")}}},
			TableStyle{Format: FormatTable, Data: datum.DataBare}, "a   b\n--- --\nx\n\n"},
		{"table empty", &OutputTable{Headings: []string{"name", "tag"}}, TableStyle{Format: FormatTable}, "name tag\n---- ---\n"},
		{"table empty no headings", &OutputTable{Headings: []string{"name"}}, TableStyle{Format: FormatTable, NoHeadings: true}, ""},
		{"list empty", &OutputTable{Headings: []string{"name"}}, TableStyle{}, ""},
		{"csv", outSample(), TableStyle{Format: FormatCSV}, "" +
			"name,external_ids,trunks,_uuid\n" +
			"p1,\"{a=\"\"x y\"\", b=\"\"1,2\"\"}\",\"[1, 2]\"," + outUUID + "\n" +
			"\"\"\"a<b>&\\\"\"c\\\"\"\"\"\",{},[],fedcba98-7654-3210-fedc-ba9876543210\n"},
		{"csv quoting", &OutputTable{Headings: []string{"a,b", "c"}, Rows: [][]Cell{{strCell("x\ny"), strCell("cr\rtab\t'")}}},
			TableStyle{Format: FormatCSV, Data: datum.DataBare}, "\"a,b\",c\n\"x\ny\",cr\rtab\t'\n"},
		{"csv empty no headings", &OutputTable{Headings: []string{"a"}}, TableStyle{Format: FormatCSV, NoHeadings: true}, ""},
		{"html", outSample(), TableStyle{Format: FormatHTML}, "" +
			"<table border=1>\n" +
			"  <tr>\n" +
			"    <th>name</th>\n" +
			"    <th>external_ids</th>\n" +
			"    <th>trunks</th>\n" +
			"    <th>_uuid</th>\n" +
			"  </tr>\n" +
			"  <tr>\n" +
			"    <td>p1</td>\n" +
			"    <td>{a=&quot;x y&quot;, b=&quot;1,2&quot;}</td>\n" +
			"    <td>[1, 2]</td>\n" +
			"    <td><a name=\"" + outUUID + "\">01234567</a></td>\n" +
			"  </tr>\n" +
			"  <tr>\n" +
			"    <td>&quot;a&lt;b&gt;&amp;\\&quot;c\\&quot;&quot;</td>\n" +
			"    <td>{}</td>\n" +
			"    <td>[]</td>\n" +
			"    <td><a name=\"fedcba98-7654-3210-fedc-ba9876543210\">fedcba98</a></td>\n" +
			"  </tr>\n" +
			"</table>\n"},
		{"html links", &OutputTable{Headings: []string{"ref", "_uuid"}, Rows: [][]Cell{{
			Cell{Type: outUUIDSet, Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeUUID, Str: outUUID}}}},
			uuidCell(outUUID)}, {strCell("X" + strings.ToUpper(outUUID) + "7'"), uuidCell(outUUID)}}},
			TableStyle{Format: FormatHTML, Data: datum.DataJSON, NoHeadings: true}, "" +
				"<table border=1>\n" +
				"  <tr>\n" +
				"    <td>[&quot;uuid&quot;,&quot;<a href=\"#" + outUUID + "\">01234567</a>&quot;]</td>\n" +
				"    <td><a name=\"[&quot;uuid&quot;,&quot;" + outUUID + "&quot;]\">[&quot;uuid&quot;,</a></td>\n" +
				"  </tr>\n" +
				"  <tr>\n" +
				"    <td>&quot;X<a href=\"#" + strings.ToUpper(outUUID) + "\">01234567</a>7'&quot;</td>\n" +
				"    <td><a name=\"[&quot;uuid&quot;,&quot;" + outUUID + "&quot;]\">[&quot;uuid&quot;,</a></td>\n" +
				"  </tr>\n" +
				"</table>\n"},
		{"html empty", &OutputTable{Headings: []string{"a"}}, TableStyle{Format: FormatHTML, NoHeadings: true}, "<table border=1>\n</table>\n"},
		{"json", outSample(), TableStyle{Format: FormatJSON, Data: datum.DataBare, NoHeadings: true},
			`{"data":[["p1",["map",[["a","x y"],["b","1,2"]]],["set",[1,2]],["uuid","` + outUUID + `"]],` +
				`["a<b>&\"c\"",["map",[]],["set",[]],["uuid","fedcba98-7654-3210-fedc-ba9876543210"]]],` +
				`"headings":["name","external_ids","trunks","_uuid"]}` + "\n"},
		{"json pretty", &OutputTable{Headings: []string{"n", "r", "b", "o"}, Rows: [][]Cell{{
			intSetCell(7),
			Cell{Type: outRealType, Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeReal, Real: 1e20}}}},
			Cell{Type: outBoolType, Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeBoolean, Bool: true}}}},
			Cell{Type: outOptInt}}}},
			TableStyle{Format: FormatJSON, Pretty: true}, "" +
				"{\n" +
				"  \"data\": [\n" +
				"    [\n" +
				"      7,\n" +
				"      1e+20,\n" +
				"      true,\n" +
				"      [\n" +
				"        \"set\",\n" +
				"        []]]],\n" +
				"  \"headings\": [\n" +
				"    \"n\",\n" +
				"    \"r\",\n" +
				"    \"b\",\n" +
				"    \"o\"]}\n"},
		{"json empty pretty", &OutputTable{Headings: []string{"a"}}, TableStyle{Format: FormatJSON, Pretty: true},
			"{\n  \"data\": [],\n  \"headings\": [\n    \"a\"]}\n"},
		{"caption", &OutputTable{Caption: "T", Headings: []string{"a"}, Rows: [][]Cell{{strCell("x")}}}, TableStyle{Format: FormatTable},
			"T\na\n-\nx\n"},
		{"caption json", &OutputTable{Caption: "T", Headings: []string{"a"}}, TableStyle{Format: FormatJSON},
			`{"caption":"T","data":[],"headings":["a"]}` + "\n"},
		{"caption html", &OutputTable{Caption: "<T>", Headings: []string{"a"}}, TableStyle{Format: FormatHTML, NoHeadings: true},
			"<table border=1>\n    <caption>&lt;T&gt;</caption>\n</table>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.table.Render(tt.style); got != tt.want {
				t.Errorf("Render(%+v):\n got %q\nwant %q", tt.style, got, tt.want)
			}
		})
	}
}

func TestOutputTableWriter(t *testing.T) {
	one := &OutputTable{Headings: []string{"a"}, Rows: [][]Cell{{strCell("x")}}}
	empty := &OutputTable{Headings: []string{"a"}}
	tests := []struct {
		format TableFormat
		want   string
	}{
		{FormatList, "a                   : x\n\n\na                   : x\n"},
		{FormatTable, "a\n-\nx\n\na\n-\n\na\n-\nx\n"},
		{FormatCSV, "a\nx\n\na\n\na\nx\n"},
		{FormatJSON, `{"data":[["x"]],"headings":["a"]}` + "\n" + `{"data":[],"headings":["a"]}` + "\n" +
			`{"data":[["x"]],"headings":["a"]}` + "\n"},
		{FormatHTML, strings.Repeat("<table border=1>\n  <tr>\n    <th>a</th>\n  </tr>\n  <tr>\n    <td>x</td>\n  </tr>\n</table>\n", 1) +
			"<table border=1>\n  <tr>\n    <th>a</th>\n  </tr>\n</table>\n" +
			"<table border=1>\n  <tr>\n    <th>a</th>\n  </tr>\n  <tr>\n    <td>x</td>\n  </tr>\n</table>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format.String(), func(t *testing.T) {
			var w TableWriter
			style := TableStyle{Format: tt.format}
			got := w.Render(one, style) + w.Render(empty, style) + w.Render(one, style)
			if got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestOutputStyleFromOptions(t *testing.T) {
	tests := []struct {
		args []string
		want TableStyle
	}{
		{nil, TableStyle{}},
		{[]string{"-f", "table", "-d", "json"}, TableStyle{Format: FormatTable, Data: datum.DataJSON}},
		{[]string{"-f", "table", "--bare"}, TableStyle{Format: FormatList, Data: datum.DataBare, NoHeadings: true}},
		{[]string{"--bare", "-f", "csv", "-d", "string"}, TableStyle{Format: FormatCSV, Data: datum.DataString, NoHeadings: true}},
		{[]string{"--format=json", "--pretty", "--no-headings"}, TableStyle{Format: FormatJSON, Pretty: true, NoHeadings: true}},
		{[]string{"-fhtml", "--max-column-width=12x"}, TableStyle{Format: FormatHTML, MaxColumnWidth: 12}},
		{[]string{"--max-column-width=-4", "-dbare"}, TableStyle{Data: datum.DataBare, MaxColumnWidth: -4}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			inv, err := Parse(append(tt.args, "list", "Bridge"))
			if err != nil {
				t.Fatal(err)
			}
			if got := TableStyleFromOptions(inv.Options); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	for f := FormatList; f <= FormatJSON; f++ {
		if got := TableStyleFromOptions(Options{Format: f.String()}).Format; got != f {
			t.Errorf("Format %q: got %v", f, got)
		}
	}
	if got := TableFormat(99).String(); got != "invalid" {
		t.Errorf("TableFormat(99) = %q", got)
	}
}

// TestOutputJSONMatchesFormatDatum checks that the json format's cells, compact, are what
// --data=json prints in the other formats.
func TestOutputJSONMatchesFormatDatum(t *testing.T) {
	cells := []Cell{
		strCell("a\"b\\c\n\x01é"), intSetCell(), intSetCell(5), intSetCell(-1, 2, 3), strMapCell(), strMapCell("k", "v", "x", ""),
		uuidCell(outUUID), {Type: outUUIDSet, Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeUUID, Str: outUUID}, {Type: datum.TypeUUID, Str: "fedcba98-7654-3210-fedc-ba9876543210"}}}},
		{Type: outRealType, Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeReal, Real: 0.1}}}},
		{Type: outBoolType, Datum: datum.Datum{Keys: []datum.Atom{{Type: datum.TypeBoolean}}}},
	}
	for _, c := range cells {
		tab := &OutputTable{Headings: []string{"c"}, Rows: [][]Cell{{c}}}
		got := tab.Render(TableStyle{Format: FormatJSON})
		want := `{"data":[[` + datum.FormatDatum(c.Type, c.Datum, datum.DataJSON) + `]],"headings":["c"]}` + "\n"
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// outputSelections are the commands whose tables the differential test prints. Each command
// is its options then its words; rows come in a deterministic order (named records, a find
// with one match, or whole tables, whose order ovs-vsctl derives from the same data every
// run).
var outputSelections = []struct {
	name string
	cmds [][]string
}{
	{"interface-all", [][]string{{"list", "Interface", "p1"}}},
	{"interfaces", [][]string{{"--columns=name,external_ids,_uuid,status,error,statistics,lacp_current", "list", "Interface", "p1", "p3", "p2"}}},
	{"ports", [][]string{{"--columns=_uuid,name,tag,trunks,interfaces,vlan_mode,external_ids", "list", "Port", "p1", "p2", "p3"}}},
	{"find", [][]string{{"--columns=name,tag,trunks,external_ids", "find", "Port", "tag=5"}}},
	{"find-none", [][]string{{"--columns=name,tag", "find", "Port", "name=nothing"}}},
	{"ugly", [][]string{{"--columns=external_ids,name,other_config,error", "list", "Interface", "p3"}}},
	{"root", [][]string{{"--columns=_uuid,bridges,cur_cfg,external_ids,other_config", "list", "Open_vSwitch", "."}}},
	{"bridges-all-rows", [][]string{{"list", "Bridge"}}},
	{"several", [][]string{
		{"--columns=name,tag", "list", "Port", "p1"},
		{"--columns=name", "find", "Port", "name=nothing"},
		{"--columns=name,external_ids", "list", "Interface", "p3", "p1"},
	}},
}

// outputFormatArgs are the global options the differential test tries, each with every
// selection.
func outputFormatArgs() [][]string {
	var out [][]string
	extras := [][]string{nil, {"--no-headings"}, {"--pretty"}, {"--max-column-width=1"}, {"--max-column-width=9"},
		{"--max-column-width=0"}, {"--max-column-width=-3"}, {"--bare"}, {"--no-headings", "--pretty", "--max-column-width=14"}}
	for _, f := range []string{"list", "table", "csv", "json", "html"} {
		for _, d := range []string{"string", "bare", "json"} {
			for _, e := range extras {
				out = append(out, append([]string{"-f", f, "-d", d}, e...))
			}
		}
		out = append(out, []string{"--bare", "-f", f}, []string{"--format=" + f, "--oneline"})
	}
	return append(out, nil)
}

// populateOutputLab fills db with records whose values exercise quoting, escaping and
// widths: spaces, quotes, commas, HTML specials, non-ASCII, empty strings, numbers and
// booleans as strings, UUIDs inside strings, newlines, tabs, control characters, trailing
// spaces, and empty sets and maps.
func populateOutputLab(t *testing.T, db *lab.OVSDB) {
	t.Helper()
	q := datum.QuoteJSONString
	kv := func(col, k, v string) string { return col + ":" + q(k) + "=" + q(v) }
	db.Vsctl(t, "--no-wait", "add-br", "br0",
		"--", "add-port", "br0", "p1", "tag=5",
		"--", "add-port", "br0", "p2", "trunks=[1,2,3,4095]", "vlan_mode=trunk",
		"--", "add-port", "br0", "p3", "other_config:a=b",
		"--", "add-br", "br1", "--", "set", "Bridge", "br1", "stp_enable=true", "fail_mode=secure",
		"protocols=[OpenFlow10,OpenFlow13]", "external_ids:x=y")
	br0 := db.Get(t, "Bridge", "br0", "_uuid")
	db.Vsctl(t, "--no-wait", "set", "Interface", "p1",
		kv("external_ids", "a", "x y"), kv("external_ids", `q"z`, "1,2"), kv("external_ids", "<&>", "é"),
		kv("external_ids", "e", ""), kv("external_ids", "num", "123"), kv("external_ids", "t", "true"),
		kv("external_ids", "u", br0), kv("external_ids", "apos", "it's"), kv("external_ids", "back", `a\b`),
		kv("external_ids", "k,v", "a=b"), kv("external_ids", "sp", " lead and trail "),
		"link_speed=1000000000", "duplex=full", "lacp_current=true", "admin_state=up",
		"statistics={rx_packets=123,tx_bytes=-5}", `status={driver_name="x y"}`, "cfm_remote_mpids=[1,2,3]",
		"mtu_request=1500", "ofport_request=7", `mac_in_use="aa:bb:cc:dd:ee:ff"`,
		"error="+q(`bad <thing> & "x"`), "ifindex=4")
	db.Vsctl(t, "--no-wait", "set", "Interface", "p3",
		kv("external_ids", "nl", "line1\nline2"), kv("external_ids", "tab", "a\tb"), kv("external_ids", "ctl", "\x01x"),
		kv("external_ids", "trail", "x   "), kv("external_ids", "long", strings.Repeat("0123456789", 7)),
		kv("external_ids", "U", strings.ToUpper(br0)+"z"), kv("external_ids", "emoji", "😀 日本語"),
		kv("external_ids", "sp ace", ""), kv("external_ids", "cr", "a\rb"), kv("external_ids", "csv", `"a","b"`),
		kv("other_config", "", "empty key"), "lacp_current=false", "error="+q("two\nlines"))
	db.Vsctl(t, "--no-wait", "set", "Port", "p3", kv("external_ids", "nl", "x\ny"))
	db.Vsctl(t, "--no-wait", "set", "Open_vSwitch", ".", "external_ids:system-id="+q("host 1"),
		"other_config:n=-7", "cur_cfg=42")
}

// TestOutputDifferential prints tables with the real ovs-vsctl in every format, data style
// and option combination, reads the same data back as JSON, renders it with OutputTable and
// requires identical bytes.
func TestOutputDifferential(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	populateOutputLab(t, db)
	schema := outputSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	matched, total := 0, 0
	for _, sel := range outputSelections {
		var cmdArgs, tables []string
		for _, c := range sel.cmds {
			cmdArgs = append(append(cmdArgs, "--"), c...)
			for i, w := range c {
				if (w == "list" || w == "find") && i+1 < len(c) {
					tables = append(tables, c[i+1])
					break
				}
			}
		}
		raw, err := rawVsctl(ctx, db, append([]string{"-f", "json", "-d", "json"}, cmdArgs...)...)
		if err != nil {
			t.Fatal(err)
		}
		data, err := tablesFromOVSJSON(schema, tables, raw)
		if err != nil {
			t.Fatalf("%s: %v\n%s", sel.name, err, raw)
		}
		for _, fargs := range outputFormatArgs() {
			total++
			args := append(append([]string(nil), fargs...), cmdArgs...)
			t.Run(sel.name+"/"+strings.Join(fargs, " "), func(t *testing.T) {
				want, err := rawVsctl(ctx, db, args...)
				if err != nil {
					t.Fatal(err)
				}
				inv, err := Parse(append([]string{"--db=" + db.Endpoint}, args...))
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				style := TableStyleFromOptions(inv.Options)
				var w TableWriter
				var got strings.Builder
				for _, tab := range data {
					got.WriteString(w.Render(tab, style))
				}
				if got.String() != want {
					t.Errorf("ovs-vsctl %s:\n%s", strings.Join(args, " "), outputDiff(want, got.String()))
					return
				}
				matched++
			})
		}
	}
	t.Logf("output differential: %d of %d cases match ovs-vsctl byte for byte", matched, total)
	if total < 500 {
		t.Errorf("only %d cases", total)
	}
}

// outputDiff describes the first difference between want and got, line by line.
func outputDiff(want, got string) string {
	wl, gl := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("first difference at line %d:\n ovs-vsctl: %q\n ours:      %q\n(full ovs-vsctl output %d bytes, ours %d)",
				i+1, w, g, len(want), len(got))
		}
	}
	return "identical"
}
