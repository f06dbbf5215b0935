package replica

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func manyPairs(n int) string {
	var b strings.Builder
	b.WriteString(`["map", [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `["k%d", "v"]`, i)
	}
	b.WriteString(`]]`)
	return b.String()
}

func manyUUIDs(n, from int) string {
	var b strings.Builder
	b.WriteString(`["set", [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `["uuid", %q]`, uid(from+i))
	}
	b.WriteString(`]]`)
	return b.String()
}

// TestLimits crosses each bound once: the error must be a *LimitError naming the bound and
// the object, match ErrTooLarge, consume exactly the one value, and leave the store as it was.
func TestLimits(t *testing.T) {
	small := Limits{Elements: 8, BridgePorts: 16, Rows: 4}
	cases := []struct {
		name    string
		lim     Limits
		update  string
		initial bool
		want    LimitError
	}{
		{"atom", Limits{}, `{"Port": {"P1": {"modify": {"external_ids": ["map", [["k", "` + strings.Repeat("x", DefaultAtom+1) + `"]]]}}}}`, false,
			LimitError{What: "atom bytes", Table: "Port", Row: uid(3), Column: "external_ids", Limit: DefaultAtom}},
		{"atom in a skipped column", Limits{}, `{"Port": {"P1": {"modify": {"status": "` + strings.Repeat("x", DefaultAtom+1) + `"}}}}`, false,
			LimitError{What: "atom bytes", Table: "Port", Row: uid(3), Limit: DefaultAtom}},
		{"map pairs", Limits{}, `{"Interface": {"I1": {"modify": {"options": ` + manyPairs(DefaultElements+1) + `}}}}`, false,
			LimitError{What: "map pairs", Table: "Interface", Row: uid(5), Column: "options", Limit: DefaultElements}},
		{"set elements", small, `{"Port": {"P2": {"modify": {"trunks": ["set", [1,2,3,4,5,6,7,8,9]]}}}}`, false,
			LimitError{What: "set elements", Table: "Port", Row: uid(4), Column: "trunks", Limit: 8}},
		{"small-table set elements", small, `{"Open_vSwitch": {"ROOT": {"modify": {"iface_types": ["set", ["a","b","c","d","e","f","g","h","i"]]}}}}`, false,
			LimitError{What: "set elements", Table: "Open_vSwitch", Row: uid(1), Column: "iface_types", Limit: 8}},
		{"bridge ports", small, `{"Bridge": {"BR": {"modify": {"ports": ` + manyUUIDs(17, 100) + `}}}}`, false,
			LimitError{What: "set elements", Table: "Bridge", Row: uid(2), Column: "ports", Limit: 16}},
		{"bridge ports after update", small, `{"Bridge": {"BR": {"modify": {"ports": ` + manyUUIDs(15, 100) + `}}}}`, false,
			LimitError{What: "elements after update", Table: "Bridge", Row: uid(2), Column: "ports", Limit: 16}},
		{"map pairs after update", small, `{"Port": {"P1": {"modify": {"other_config": ` + manyPairs(8) + `}}}}`, false,
			LimitError{}}, // 8 pairs: at the bound, accepted
		{"map pairs after two updates", small, `{"Port": {"P1": {"modify": {"external_ids": ` + manyPairs(7) + `}}}}`, false,
			LimitError{What: "elements after update", Table: "Port", Row: uid(3), Column: "external_ids", Limit: 8}},
		{"rows in a message", small, `{"Queue": {` + rows(5) + `}}`, false,
			LimitError{What: "rows", Table: "Queue", Limit: 4}},
		{"rows in a reply", small, `{"Queue": {` + rows(5) + `}}`, true,
			LimitError{What: "rows", Table: "Queue", Limit: 4}},
		{"rows after update", small, `{"QoS": {` + rows(3) + `}}`, false,
			LimitError{What: "rows", Table: "QoS", Limit: 4}},
		{"nesting depth", Limits{}, `{"Port": {"P1": {"modify": {"status": ` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}}}}`, false,
			LimitError{What: "nesting depth", Table: "Port", Row: uid(3), Limit: DefaultDepth}},
		{"nesting depth in an unknown table", Limits{}, `{"SSL": ` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`, false,
			LimitError{What: "nesting depth", Limit: DefaultDepth}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(t, Options{Limits: c.lim})
			mustRead(t, s, base(), true)
			before := snapshot(s)
			err := read(s, sub(c.update), c.initial)
			if c.want == (LimitError{}) {
				if err != nil {
					t.Fatalf("err = %v at the bound", err)
				}
				return
			}
			var le *LimitError
			if !errors.As(err, &le) || !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want a *LimitError", err)
			}
			if *le != c.want {
				t.Errorf("error %+v, want %+v", *le, c.want)
			}
			msg := err.Error()
			for _, part := range []string{c.want.What, fmt.Sprintf("limit of %d", c.want.Limit), c.want.Table, c.want.Column, c.want.Row} {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q does not name %q", msg, part)
				}
			}
			if !reflect.DeepEqual(before, snapshot(s)) {
				t.Error("store changed")
			}
		})
	}
}

func rows(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%q: {"insert": {}}`, uid(1000+i))
	}
	return b.String()
}

// TestLimitDefaults pins the defaults to the design's table (§3.3).
func TestLimitDefaults(t *testing.T) {
	got := Limits{}.withDefaults()
	want := Limits{Atom: 1 << 20, Elements: 64 << 10, BridgePorts: 1 << 20, Rows: 1 << 20, Depth: 16}
	if got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
}
