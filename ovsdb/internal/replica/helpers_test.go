package replica

import (
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// allTables are the tables the store keeps.
func allTables() []string {
	return []string{vswitch.OpenvSwitchTable, vswitch.BridgeTable, vswitch.PortTable, vswitch.InterfaceTable,
		vswitch.ControllerTable, vswitch.MirrorTable, vswitch.NetFlowTable, vswitch.IPFIXTable, vswitch.SFlowTable,
		vswitch.FlowSampleCollectorSetTable, vswitch.QoSTable, vswitch.QueueTable}
}

func uid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012x", n) }

func newTestStore(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := NewStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// read reads raw with the store inside a JSON array followed by a sentinel value, checks
// that exactly one value was consumed (unless the decoder failed), and commits.
func read(s *Store, raw string, initial bool) error {
	return readCheck(s, raw, initial, true)
}

// errNotConsumed marks a broken contract of ReadTableUpdates.
const errNotConsumed = sentinel("ReadTableUpdates did not consume exactly one value")

// readCheck is read; check=false skips the check of what was consumed (for input that is not
// one JSON value, where the check cannot tell).
func readCheck(s *Store, raw string, initial, check bool) error {
	d := jsontext.NewDecoder(strings.NewReader("["+raw+", 7]"), jsontext.AllowDuplicateNames(true))
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	p, err := s.ReadTableUpdates(d, initial)
	if err == nil {
		err = p.Commit()
	} else if check && d.StackDepth() == 1 {
		tok, terr := d.ReadToken()
		if n, _ := tok.Int(); terr == nil && (tok.Kind() != '0' || n != 7) {
			return fmt.Errorf("%w (next token %v) after: %v", errNotConsumed, tok, err)
		}
	}
	return err
}

func mustRead(t testing.TB, s *Store, raw string, initial bool) {
	t.Helper()
	if err := read(s, raw, initial); err != nil {
		t.Fatalf("%v\ninput: %s", err, raw)
	}
}

// oracle is libovsdb v0.8.1's cache fed as its client feeds it: json.Unmarshal into
// TableUpdates2, Purge for a monitor reply, then Populate2.
type oracle struct {
	db model.DatabaseModel
	tc *cache.TableCache
}

func newOracle(t testing.TB) *oracle {
	t.Helper()
	db, err := newDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := cache.NewTableCache(db, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &oracle{db: db, tc: tc}
}

// apply returns libovsdb's verdict on raw; a panic inside libovsdb counts as a rejection.
func (o *oracle) apply(raw string, initial bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("libovsdb panicked: %v", p)
		}
	}()
	var tu ovsdb.TableUpdates2
	if err := json.Unmarshal([]byte(raw), &tu); err != nil {
		return err
	}
	if initial {
		o.tc.Purge(o.db)
	}
	return o.tc.Populate2(tu)
}

// keptColumns are the columns the store keeps of table.
func keptColumns(table string, stats bool) map[string]bool {
	kept := map[string]bool{"_uuid": true}
	switch table {
	case vswitch.PortTable:
		for c := 0; c < ptColumns; c++ {
			kept[portColumn(c)] = true
		}
	case vswitch.InterfaceTable:
		for c := 0; c < ifColumns; c++ {
			kept[ifaceColumn(c)] = c != ifStatistics || stats
		}
	default:
		cols := monitoredColumns()[table]
		if cols == nil {
			return nil // all
		}
		for _, c := range cols {
			kept[c] = true
		}
		if table == vswitch.BridgeTable {
			kept["ports"] = true
		}
	}
	return kept
}

// canonical returns a copy of libovsdb's model m restricted to the columns the store keeps,
// normalised as the store materialises rows: empty maps and sets nil (libovsdb has nil for an
// omitted column and after a modify that empties one, but an empty non-nil value for an
// explicit empty one), sets sorted without duplicates.
func canonical(table string, m model.Model, stats bool) model.Model {
	c := model.Clone(m)
	kept := keptColumns(table, stats)
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < v.NumField(); i++ {
		if kept != nil && !kept[v.Type().Field(i).Tag.Get("ovsdb")] {
			v.Field(i).SetZero()
		}
	}
	normModel(c)
	return c
}

// compare checks that every row of the store equals libovsdb's, and the name lookups.
func compare(t testing.TB, s *Store, o *oracle, stats bool) {
	t.Helper()
	for _, table := range allTables() {
		rows := o.tc.Table(table).Rows()
		if got := s.Count(table); got != len(rows) {
			t.Errorf("%s: store has %d rows, libovsdb %d", table, got, len(rows))
		}
		names := map[string]int{}
		for id, m := range rows {
			if f := reflect.ValueOf(m).Elem().FieldByName("Name"); f.IsValid() {
				names[f.String()]++
			}
			got, ok := s.ByUUID(table, id)
			if !ok {
				t.Errorf("%s row %s: missing from the store", table, id)
				continue
			}
			want := canonical(table, m, stats)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s row %s:\n store    %+v\n libovsdb %+v", table, id, got, want)
			}
		}
		for id, m := range rows {
			name := reflect.ValueOf(m).Elem().FieldByName("Name")
			if !name.IsValid() || names[name.String()] != 1 {
				continue
			}
			var got model.Model
			var ok bool
			switch table {
			case vswitch.BridgeTable:
				got, ok = s.Bridge(name.String())
			case vswitch.PortTable:
				got, ok = s.Port(name.String())
			case vswitch.InterfaceTable:
				got, ok = s.Interface(name.String())
			default:
				continue
			}
			if !ok || !reflect.DeepEqual(got, canonical(table, m, stats)) {
				t.Errorf("%s named %q: store %+v (found %v), libovsdb row %s", table, name.String(), got, ok, id)
			}
		}
	}
}

// snapshot materialises the whole store, for "unchanged" checks.
func snapshot(s *Store) map[string][]model.Model {
	out := map[string][]model.Model{}
	for _, table := range allTables() {
		var rows []model.Model
		s.Each(table, func(m model.Model) bool { rows = append(rows, m); return true })
		slices.SortFunc(rows, func(a, b model.Model) int {
			return strings.Compare(reflect.ValueOf(a).Elem().Field(0).String(), reflect.ValueOf(b).Elem().Field(0).String())
		})
		out[table] = rows
	}
	return out
}

func isStricter(err error) bool {
	var se *jsontext.SyntacticError
	return errors.Is(err, ErrMalformed) || errors.As(err, &se)
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
