package model

import (
	"encoding/json"
	"strings"
	"testing"
)

// A bridge without flow export marshals without the export fields (the API store keeps that
// JSON in external_ids; empty fields are left out of it).
func TestBridgeJSONWithoutExport(t *testing.T) {
	b, err := json.Marshal(Bridge{Name: "br0"})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"Name":"br0"}`
	if string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	b, _ = json.Marshal(Bridge{Name: "br0", NetFlow: &NetFlow{Targets: []string{"127.0.0.1:2055"}}})
	var back Bridge
	if err := json.Unmarshal(b, &back); err != nil || back.NetFlow == nil || back.NetFlow.Targets[0] != "127.0.0.1:2055" {
		t.Errorf("round trip of %s: %+v, %v", b, back.NetFlow, err)
	}
}

// CheckExportTarget accepts IPv4:PORT and [IPv6]:PORT only.
func TestCheckExportTarget(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:2055", "[2001:db8::1]:4739", "[::1]:1", "192.0.2.1:65535"} {
		if err := CheckExportTarget(ok); err != nil {
			t.Errorf("CheckExportTarget(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:02055",
		"host:2055", "2001:db8::1:2055", "[fe80::1%eth0]:2055", "[::ffff:127.0.0.1]:2055", " 127.0.0.1:2055",
		"127.0.0.1:2055 ", strings.Repeat("1", 70)} {
		if err := CheckExportTarget(bad); err == nil {
			t.Errorf("CheckExportTarget(%q) accepted it", bad)
		}
	}
}
