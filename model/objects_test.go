package model

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A port's JSON (the spec ovsplaned keeps in its rows' external_ids) leaves out empty fields,
// and the verbose form rows written before carry (every field, nulls included) reads back to
// the same port.
func TestPortJSONOmitsEmptyAndReadsTheVerboseForm(t *testing.T) {
	tag := 7
	p := Port{Name: "p1", Tag: &tag, Interfaces: []Interface{{Name: "p1", Type: "internal"}}}
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"Name":"p1","Tag":7,"Interfaces":[{"Name":"p1","Type":"internal"}]}`; string(got) != want {
		t.Errorf("port JSON\n got %s\nwant %s", got, want)
	}
	const verbose = `{"Name":"p1","Tag":7,"Trunks":null,"VLANMode":"","BondMode":"","LACP":"","OtherConfig":null,"ExternalIDs":null,` +
		`"Interfaces":[{"Name":"p1","Type":"internal","Options":null,"MTURequest":null,"OFPortRequest":null,"OtherConfig":null,"ExternalIDs":null}]}`
	var old Port
	if err := json.Unmarshal([]byte(verbose), &old); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(old, p) {
		t.Errorf("the verbose form reads as %+v, want %+v", old, p)
	}
	// Zero values that mean something are kept: tag 0 is VLAN 0, not "no tag".
	zero := 0
	got, _ = json.Marshal(Port{Name: "p0", Tag: &zero})
	if !strings.Contains(string(got), `"Tag":0`) {
		t.Errorf("tag 0 dropped from %s", got)
	}
}
