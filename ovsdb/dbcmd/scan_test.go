package dbcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	vsschema "github.com/ovsplane/ovsplane/ovsdb/vswitch/schema"
)

// decodeInitialRows is how listTable decoded its reply before scanRows (encoding/json into
// generic values, converted by datumFromJSON in mergeReply); genericRows runs it, as the
// reference scanRows must agree with.
func decodeInitialRows(raw json.RawMessage, table string) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil && t == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("malformed reply")
	}
	var rows []map[string]any
	for dec.More() {
		tk, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tk.(string)
		if name != table {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, fmt.Errorf("malformed table update")
		}
		for dec.More() {
			tk, err := dec.Token()
			if err != nil {
				return nil, err
			}
			uuid, _ := tk.(string)
			var upd struct {
				Initial map[string]any `json:"initial"`
				Insert  map[string]any `json:"insert"`
			}
			if err := dec.Decode(&upd); err != nil {
				return nil, err
			}
			row := upd.Initial
			if row == nil {
				row = upd.Insert
			}
			if row == nil {
				row = map[string]any{}
			}
			row["_uuid"] = []any{"uuid", uuid}
			rows = append(rows, row)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// genericRows decodes raw the generic way into scannedRows; panicked reports that
// datumFromJSON panicked (a "set" value with elements for a map column).
func genericRows(raw []byte, table string, want []string, cols []*ColumnSchema) (rows []scannedRow, err error, panicked bool) {
	defer func() {
		if recover() != nil {
			rows, err, panicked = nil, nil, true
		}
	}()
	maps, err := decodeInitialRows(raw, table)
	if err != nil {
		return nil, err, false
	}
	for _, m := range maps {
		u, err := datumFromJSON(uuidType, m["_uuid"])
		if err != nil {
			return nil, err, false
		}
		r := scannedRow{uuid: u.Keys[0].Str, vals: make([]datum.Datum, len(want)), have: make([]bool, len(want))}
		for i := 1; i < len(want); i++ {
			v, ok := m[want[i]]
			if !ok {
				continue
			}
			d, err := datumFromJSON(cols[i].Type, v)
			if err != nil {
				return nil, err, false
			}
			r.vals[i], r.have[i] = d, true
		}
		rows = append(rows, r)
	}
	return rows, nil, false
}

// scanColumns: every kind of column type the vswitch schema has (string, integer, real,
// boolean, uuid; scalar, optional, set, map).
var scanColumns = map[string][]string{
	"Interface": {"_uuid", "name", "ofport", "external_ids", "options", "mtu", "link_speed", "statistics", "bfd_status", "admin_state"},
	"Port":      {"_uuid", "name", "interfaces", "tag", "trunks", "external_ids", "fake_bridge", "qos"},
	"QoS":       {"_uuid", "queues", "type"},
	"Queue":     {"_uuid", "dscp"},
	"Bridge":    {"_uuid", "ports", "stp_enable", "external_ids"},
}

func scanSchema(t testing.TB, table string) ([]string, []*ColumnSchema) {
	t.Helper()
	s, err := ParseSchema(vsschema.JSON())
	if err != nil {
		t.Fatal(err)
	}
	want := scanColumns[table]
	ts := s.Tables[table]
	cols := make([]*ColumnSchema, len(want))
	for i, c := range want {
		if cols[i] = ts.Columns[c]; cols[i] == nil {
			t.Fatalf("%s has no column %s", table, c)
		}
	}
	return want, cols
}

var scanSeeds = []string{
	`null`,
	`{}`,
	`{"Interface":{}}`,
	`{"Interface":{"0b3e0f9c-1f6a-4c57-9b1e-3a6d2a1c2f01":{"initial":{"name":"p1","ofport":3,"external_ids":["map",[["attached-mac","fa:16:3e:00:00:01"],["iface-id","id-1"]]],"options":["map",[]],"mtu":["set",[]],"link_speed":10000000000,"statistics":["map",[["rx_bytes",12],["tx_bytes",0]]],"admin_state":"up"}},` +
		`"1B3E0F9C-1F6A-4C57-9B1E-3A6D2A1C2F02":{"initial":{"name":"p\u00e9\"2","ofport":-1,"mtu":1500,"bfd_status":["map",[["z","1"],["a","2"]]]}}},"Port":{"x":{"initial":{}}}}`,
	`{"Port":{"u1":{"initial":{"name":"p","interfaces":["uuid","0b3e0f9c-1f6a-4c57-9b1e-3a6d2a1c2f01"],"tag":7,"trunks":["set",[3,1,2]],"fake_bridge":false,"qos":["set",[]]}},"u2":{"insert":{"name":"q","trunks":5}},"u3":null,"u4":{"initial":null,"insert":{"name":"r"}}}}`,
	`{"QoS":{"q":{"initial":{"queues":["map",[[1,["uuid","0b3e0f9c-1f6a-4c57-9b1e-3a6d2a1c2f01"]],[0,["uuid","aa"]]]],"type":"linux-htb"}}}}`,
	`{"Queue":{"q":{"initial":{"dscp":1.0}}}}`,
	`{"Bridge":{"b":{"initial":{"ports":["set",[["uuid","b"],["uuid","a"],["uuid","a"]]],"stp_enable":true,"external_ids":["map",5]}}}}`,
	`{"Interface":{"u":{"initial":{"name":"x","name":"y","ofport":"bad","ofport":4}}}}`,
	`{"Interface":{"u":{"initial":{"name":["set",["only"]],"external_ids":["set",[]]}}}}`,
	`{"Interface":{"u":{"initial":{"name":"\xff\xfe"}}}}`,
	`{"Interface":{"u":{"Initial":{"name":"a"},"initial":{"ofport":1}}}}`,
	`{"Interface":{"u":{"initial":{"ofport":1e3,"mtu":1.5}}}}`,
	`{"Interface":{"u":{"initial":{"external_ids":["map",[["k"]]]}}}}`,
	`{"Interface":{"u":{"initial":{"external_ids":["map",[],1]}}}}`,
	`{"Interface":{"u":{"initial":{"name":01}}}}`,
	`{"Interface":[]}`,
}

// TestScanRowsMatchesGeneric checks scanRows against the generic decoding on the seeds.
func TestScanRowsMatchesGeneric(t *testing.T) {
	for _, seed := range scanSeeds {
		for table := range scanColumns {
			checkScan(t, []byte(seed), table)
		}
	}
}

// TestScanRowsDecodes checks the values of one realistic reply.
func TestScanRowsDecodes(t *testing.T) {
	want, cols := scanSchema(t, "Interface")
	rows, err := scanRows([]byte(scanSeeds[3]), "Interface", want, cols)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1].uuid != "1b3e0f9c-1f6a-4c57-9b1e-3a6d2a1c2f02" {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[0]
	if r.vals[1].Keys[0].Str != "p1" || r.vals[2].Keys[0].Int != 3 || len(r.vals[3].Keys) != 2 ||
		r.vals[3].Values[1].Str != "id-1" || !r.have[4] || len(r.vals[4].Keys) != 0 || r.have[8] {
		t.Errorf("row %+v", r)
	}
	if got := rows[1].vals[8]; got.Keys[0].Str != "a" || got.Values[0].Str != "2" {
		t.Errorf("unsorted map not sorted: %+v", got)
	}
	if rows[1].vals[1].Keys[0].Str != "pé\"2" {
		t.Errorf("escaped name %q", rows[1].vals[1].Keys[0].Str)
	}
}

func checkScan(t *testing.T, raw []byte, table string) {
	t.Helper()
	want, cols := scanSchema(t, table)
	got, err := scanRows(raw, table, want, cols)
	ref, rerr, panicked := genericRows(raw, table, want, cols)
	if panicked {
		return // the generic path had no answer; scanRows must only not panic
	}
	if err != nil && rerr == nil && !json.Valid(raw) {
		return // scanRows refuses broken JSON the generic decoder stopped reading before
	}
	if (err == nil) != (rerr == nil) {
		t.Fatalf("%s of %q: scanRows error %v, generic error %v", table, raw, err, rerr)
	}
	if err != nil {
		return
	}
	if len(got) == 0 && len(ref) == 0 {
		return
	}
	if !reflect.DeepEqual(got, ref) {
		t.Fatalf("%s of %q:\nscanRows %+v\ngeneric  %+v", table, raw, got, ref)
	}
}

// FuzzScanRows: on any input, scanRows does not panic and agrees with the generic decoding
// (same rows and values, or both an error; on input that is not valid JSON it may refuse what
// the generic decoding accepted by not reading that far).
func FuzzScanRows(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s), strings.Contains(s, "Port"))
	}
	f.Fuzz(func(t *testing.T, raw []byte, port bool) {
		if len(raw) > 1<<16 {
			return
		}
		table := "Interface"
		if port {
			table = "Port"
		}
		checkScan(t, raw, table)
		checkScan(t, raw, "QoS")
	})
}
