package query

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"text/tabwriter"
	"time"
)

// Format is how Render writes a Result.
type Format uint8

// The output formats.
const (
	// Table is aligned columns for a terminal.
	Table Format = iota + 1
	// JSON is the wire form (WriteJSON), the same the query socket and the API answer.
	JSON
	// CSV is RFC 4180 with a header row.
	CSV
)

// ParseFormat returns the format named table, json or csv.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "table":
		return Table, nil
	case "json":
		return JSON, nil
	case "csv":
		return CSV, nil
	}
	return 0, fmt.Errorf("format %q: use table, json or csv", clip(s))
}

// MaxResultBytes bounds a Result's JSON form as ReadJSON accepts it: MaxRows records of a few
// hundred bytes each, with room to spare.
const MaxResultBytes = 16 << 20

// Wire is the JSON form of a Result (snake_case names, times in RFC 3339 with nanoseconds,
// addresses as text): the answer of the collector's query socket, of the daemon's
// /flowmon/v1/query and of `flowmon query --format json`. Kind says which list is set.
type Wire struct {
	Kind    string      `json:"kind"`
	Records []WireFlow  `json:"records,omitempty"`
	Groups  []WireGroup `json:"groups,omitempty"`
	Points  []WirePoint `json:"points,omitempty"`
}

// WireFlow is a RecordRow in JSON.
type WireFlow struct {
	Start    time.Time  `json:"start"`
	End      time.Time  `json:"end"`
	Received time.Time  `json:"received"`
	Exporter netip.Addr `json:"exporter"`
	Protocol string     `json:"protocol"`
	Domain   uint32     `json:"domain"`
	Src      netip.Addr `json:"src"`
	Dst      netip.Addr `json:"dst"`
	Proto    uint8      `json:"proto"`
	SrcPort  uint16     `json:"src_port"`
	DstPort  uint16     `json:"dst_port"`
	TCPFlags uint8      `json:"tcp_flags"`
	ToS      uint8      `json:"tos"`
	Bytes    uint64     `json:"bytes"`
	Packets  uint64     `json:"packets"`
	InIf     uint32     `json:"in_if"`
	OutIf    uint32     `json:"out_if"`
	Bridge   string     `json:"bridge"`
	InPort   string     `json:"in_port"`
	OutPort  string     `json:"out_port"`
}

// WireGroup is a Group in JSON.
type WireGroup struct {
	Key     string `json:"key"`
	Bytes   uint64 `json:"bytes"`
	Packets uint64 `json:"packets"`
	Flows   uint64 `json:"flows"`
}

// WirePoint is a Point in JSON.
type WirePoint struct {
	Start   time.Time `json:"start"`
	Bytes   uint64    `json:"bytes"`
	Packets uint64    `json:"packets"`
	Flows   uint64    `json:"flows"`
}

// ToWire converts the result of a query of kind k to its JSON form.
func ToWire(k Kind, r Result) Wire {
	w := Wire{Kind: k.String()}
	for _, f := range r.Records {
		wf := WireFlow(f)
		wf.Start, wf.End, wf.Received = f.Start.UTC(), f.End.UTC(), f.Received.UTC()
		w.Records = append(w.Records, wf)
	}
	for _, g := range r.Groups {
		w.Groups = append(w.Groups, WireGroup(g))
	}
	for _, p := range r.Points {
		w.Points = append(w.Points, WirePoint{Start: p.Start.UTC(), Bytes: p.Bytes, Packets: p.Packets, Flows: p.Flows})
	}
	return w
}

// Result converts the JSON form back; it returns the kind too.
func (w Wire) Result() (Kind, Result, error) {
	var k Kind
	for c := Flows; c <= Series; c++ {
		if c.String() == w.Kind {
			k = c
		}
	}
	if k == 0 {
		return 0, Result{}, fmt.Errorf("result kind %q: want flows, top or series", clip(w.Kind))
	}
	if len(w.Records)+len(w.Groups)+len(w.Points) > MaxRows {
		return 0, Result{}, fmt.Errorf("result: %d rows, more than %d", len(w.Records)+len(w.Groups)+len(w.Points), MaxRows)
	}
	var r Result
	for _, f := range w.Records {
		r.Records = append(r.Records, RecordRow(f))
	}
	for _, g := range w.Groups {
		r.Groups = append(r.Groups, Group(g))
	}
	for _, p := range w.Points {
		r.Points = append(r.Points, Point(p))
	}
	return k, r, nil
}

// WriteJSON writes the result of a query of kind k as one JSON object (Wire) and a newline.
func WriteJSON(w io.Writer, k Kind, r Result) error {
	if err := json.NewEncoder(w).Encode(ToWire(k, r)); err != nil {
		return fmt.Errorf("writing the result as JSON: %w", err)
	}
	return nil
}

// ReadJSON reads what WriteJSON wrote, at most MaxResultBytes.
func ReadJSON(r io.Reader) (Kind, Result, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxResultBytes+1))
	if err != nil {
		return 0, Result{}, fmt.Errorf("reading a result: %w", err)
	}
	if len(data) > MaxResultBytes {
		return 0, Result{}, fmt.Errorf("result: more than %d bytes", MaxResultBytes)
	}
	var w Wire
	if err := json.Unmarshal(data, &w); err != nil {
		return 0, Result{}, fmt.Errorf("decoding a result: %w", err)
	}
	return w.Result()
}

// Columns returns the column names of a kind's rows, as Table and CSV write them.
func Columns(k Kind, key Key) []string {
	switch k {
	case Top:
		return []string{key.String(), "bytes", "packets", "flows"}
	case Series:
		return []string{"start", "bytes", "packets", "flows"}
	}
	return []string{"end", "start", "exporter", "bridge", "in_port", "out_port", "proto", "src", "sport", "dst", "dport", "bytes", "packets"}
}

// Rows returns the result's rows as text, in Columns' order.
func Rows(k Kind, r Result) [][]string {
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	var out [][]string
	switch k {
	case Top:
		for _, g := range r.Groups {
			out = append(out, []string{g.Key, u(g.Bytes), u(g.Packets), u(g.Flows)})
		}
	case Series:
		for _, p := range r.Points {
			out = append(out, []string{p.Start.UTC().Format(time.RFC3339), u(p.Bytes), u(p.Packets), u(p.Flows)})
		}
	default:
		for _, f := range r.Records {
			out = append(out, []string{f.End.UTC().Format(time.RFC3339Nano), f.Start.UTC().Format(time.RFC3339Nano), addr(f.Exporter),
				f.Bridge, f.InPort, f.OutPort, ProtoName(f.Proto), addr(f.Src), strconv.Itoa(int(f.SrcPort)), addr(f.Dst),
				strconv.Itoa(int(f.DstPort)), u(f.Bytes), u(f.Packets)})
		}
	}
	return out
}

// addr is an address as text, "-" when unset.
func addr(a netip.Addr) string {
	if !a.IsValid() {
		return "-"
	}
	return a.String()
}

// Render writes the result of q in format f: a table with a header (and "no flows" when
// empty), JSON (WriteJSON) or CSV with a header row.
func Render(w io.Writer, q Query, r Result, f Format) error {
	cols, rows := Columns(q.Kind, q.GroupBy), Rows(q.Kind, r)
	switch f {
	case JSON:
		return WriteJSON(w, q.Kind, r)
	case CSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(cols); err != nil {
			return fmt.Errorf("writing CSV: %w", err)
		}
		if err := cw.WriteAll(rows); err != nil {
			return fmt.Errorf("writing CSV: %w", err)
		}
		return nil
	case Table:
		tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		line := func(cells []string) {
			for i, c := range cells {
				if c == "" {
					c = "-"
				}
				if i > 0 {
					fmt.Fprint(tw, "\t")
				}
				fmt.Fprint(tw, c)
			}
			fmt.Fprint(tw, "\n")
		}
		line(cols)
		for _, row := range rows {
			line(row)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the table: %w", err)
		}
		if len(rows) == 0 {
			if _, err := fmt.Fprintf(w, "no flows from %s to %s match\n", q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339)); err != nil {
				return fmt.Errorf("writing the table: %w", err)
			}
		}
		return nil
	}
	return errors.New("render: unknown format: use table, json or csv")
}
