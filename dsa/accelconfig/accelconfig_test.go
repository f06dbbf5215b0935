package accelconfig

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// The files in testdata are written for these tests in accel-config's format: what the dsa
// library configures (dpdk_profile.conf), a profile in the style of accel-config's shipped
// ones with the trailing commas its net_profile.conf has (app_profile_trailing_commas.conf),
// and `accel-config list`-style output with read-only attributes and an IAA device
// (list_two_devices.conf).
var confs = []string{"dpdk_profile.conf", "app_profile_trailing_commas.conf", "list_two_devices.conf"}

// TestGoldenRoundTrip: each file parses; Marshal writes the golden file; the golden parses
// back to the same Config; and Marshal of that is the same bytes.
func TestGoldenRoundTrip(t *testing.T) {
	for _, name := range confs {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		out, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", strings.TrimSuffix(name, ".conf")+".golden")
		if *update {
			if err := os.WriteFile(golden, out, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to write it)", err)
		}
		if !bytes.Equal(out, want) {
			t.Errorf("%s: Marshal differs from %s:\n%s", name, golden, out)
		}
		if !json.Valid(out) {
			t.Errorf("%s: Marshal wrote invalid JSON", name)
		}
		again, err := Parse(out)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Errorf("%s: parse(marshal(parse)) = %+v, %v\nwant %+v", name, again, err, c)
		}
		if out2, _ := Marshal(again); !bytes.Equal(out2, out) {
			t.Errorf("%s: Marshal is not stable", name)
		}
	}
}

// TestTrailingCommas: the profile with json-c's trailing commas is refused by encoding/json
// and read here, with commas and brackets inside strings untouched.
func TestTrailingCommas(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "app_profile_trailing_commas.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if json.Valid(data) {
		t.Fatal("the profile has no trailing comma: the test proves nothing")
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	g := c.Devices[0].Groups
	if len(g) != 2 || g[0].WQs[0].Name != "app, the first,]" || g[1].WQs[0].Name != `app"2\` || *g[1].WQs[0].Threshold != 60 ||
		len(g[1].Engines) != 1 || *g[1].Engines[0].GroupID != 1 || string(g[0].Extra["tokens_allowed"]) != "0" {
		t.Errorf("parsed %+v", c)
	}
	for in, want := range map[string]string{
		`[1,]`:                     `[1 ]`,
		`{"a":",]",}`:              `{"a":",]" }`,
		`["\",]",` + "\n\t]":       `["\",]" ` + "\n\t]",
		`[",\\",]`:                 `[",\\" ]`,
		`[1,,]`:                    `[1, ]`,
		`,`:                        `,`,
		`{"a":[1,],"b":{"c":1,},}`: `{"a":[1 ],"b":{"c":1 } }`,
	} {
		if got := string(stripTrailingCommas([]byte(in))); got != want {
			t.Errorf("stripTrailingCommas(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseValues(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "list_two_devices.conf"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Devices[0]
	if d.Dev != "dsa0" || *d.MaxWorkQueues != 8 || *d.WorkQueueSize != 128 || *d.NUMANode != 0 || d.State != "enabled" ||
		*d.MaxTransferSize != 2147483648 || *d.PASIDEnabled != 1 || string(d.Extra["gen_cap"]) != `"0x40915f0107"` {
		t.Errorf("device %+v", d)
	}
	w := d.Groups[0].WQs[0]
	if w.Dev != "wq0.0" || w.Mode != "dedicated" || *w.Size != 128 || w.Type != "user" || w.Name != "ovs1_wq0.0" ||
		w.DriverName != "user" || *w.ATSDisable != 0 || w.State != "enabled" || *w.Clients != 1 || string(w.Extra["cdev_minor"]) != "0" {
		t.Errorf("wq %+v", w)
	}
	if iax := c.Devices[1]; iax.Dev != "iax1" || string(iax.Extra["op_cap"]) != `["0xd","0x7f331c","0","0"]` || len(d.Groups[0].Engines) != 4 {
		t.Errorf("iax1 %+v", iax)
	}
}

// TestParseErrors: every refusal names the object at fault.
func TestParseErrors(t *testing.T) {
	wq := func(attrs string) string {
		return `[{"dev":"dsa0","groups":[{"dev":"group0.0","grouped_workqueues":[{"dev":"wq0.1",` + attrs + `}]}]}]`
	}
	for _, tc := range []struct{ name, in, want string }{
		{"not an array", `{"dev":"dsa0"}`, "not a JSON array of devices"},
		{"syntax", "[\n{\"dev\":\"dsa0\"\n", "line 3 column 1"},
		{"device not an object", `[1]`, "device 1: not a JSON object"},
		{"no dev", `[{"groups":[]}]`, `device 1: no "dev" name`},
		{"dev not a string", `[{"dev":0}]`, `device 1: "dev" is not a string`},
		{"bad device name", `[{"dev":"nvme0"}]`, `device 1: "nvme0" is not an accelerator name`},
		{"device twice", `[{"dev":"dsa0"},{"dev":"dsa0"}]`, "dsa0: listed twice"},
		{"groups not an array", `[{"dev":"dsa0","groups":{}}]`, `dsa0: "groups" is not an array`},
		{"group of another device", `[{"dev":"dsa0","groups":[{"dev":"group1.0"}]}]`, "dsa0/group 1: group1.0 belongs to device number 1, not 0"},
		{"group named like a wq", `[{"dev":"dsa0","groups":[{"dev":"wq0.0"}]}]`, `dsa0/group 1: "wq0.0" is not a group name`},
		{"group twice", `[{"dev":"dsa0","groups":[{"dev":"group0.0"},{"dev":"group0.0"}]}]`, "dsa0/group 2: group0.0 is listed twice"},
		{"wqs not an array", `[{"dev":"dsa0","groups":[{"dev":"group0.0","grouped_workqueues":1}]}]`, `dsa0/group0.0: "grouped_workqueues" is not an array`},
		{"size a string", wq(`"size":"32k"`), `dsa0/group0.0/wq0.1: size: want a whole number, got "32k"`},
		{"size a fraction", wq(`"size":1.5`), `dsa0/group0.0/wq0.1: size: want a whole number, got 1.5`},
		{"size too big", wq(`"size":99999999999`), "dsa0/group0.0/wq0.1: size: want a whole number"},
		{"negative transfer", wq(`"max_transfer_size":-1`), "dsa0/group0.0/wq0.1: max_transfer_size: want a whole number of at least 0"},
		{"mode a number", wq(`"mode":1`), "dsa0/group0.0/wq0.1: mode: want a string, got 1"},
		{"engine of another device", `[{"dev":"dsa0","groups":[{"dev":"group0.0","grouped_engines":[{"dev":"engine2.0"}]}]}]`, "dsa0/group0.0/engine 1: engine2.0 belongs to device number 2"},
		{"wq twice", `[{"dev":"dsa0","groups":[{"dev":"group0.0","grouped_workqueues":[{"dev":"wq0.0"}]},{"dev":"group0.1","grouped_workqueues":[{"dev":"wq0.0"}]}]}]`, "dsa0/group0.1/work queue 1: wq0.0 is listed twice"},
		{"too big", "[" + strings.Repeat(" ", MaxBytes) + "]", "bytes (at most 1048576)"},
		{"too many devices", "[" + strings.Repeat(`{"dev":"dsa0"},`, MaxDevices) + `{"dev":"dsa0"}]`, "65 devices (at most 64)"},
		{"too many wqs", `[{"dev":"dsa0","groups":[{"dev":"group0.0","grouped_workqueues":[` + strings.Repeat(`{},`, MaxWQs) + `{}]}]}]`, "dsa0/group0.0: 257 grouped_workqueues (at most 256)"},
		{"too many attributes", `[{"dev":"dsa0",` + manyAttrs(MaxExtra+1) + `}]`, "dsa0: 65 attributes this package does not know"},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "accel-config: ") {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func manyAttrs(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, `"x`+strings.Repeat("y", i)+`":1`)
	}
	return strings.Join(parts, ",")
}

// FuzzParse: whatever the bytes, Parse does not panic, and what it accepts marshals to JSON
// that parses back to the same Config and marshals to the same bytes.
func FuzzParse(f *testing.F) {
	for _, name := range confs {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`[{"dev":"dsa0","groups":[{"dev":"group0.0","x":[1,],"grouped_engines":[{"dev":"engine0.0","group_id":-1},]}],},]`))
	f.Add([]byte(`["\u0000",]`))
	f.Add([]byte(`[`))
	f.Add([]byte(`[{"dev":"dsa0","groups":[{"dev":"group0.0","grouped_workqueues":[{"dev":"wq0.0","size":"x"}]}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		out, err := Marshal(c)
		if err != nil {
			t.Fatalf("Marshal of a parsed config: %v", err)
		}
		again, err := Parse(out)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("parse(marshal(c)) = %+v, %v\nwant %+v\nmarshal:\n%s", again, err, c, out)
		}
		if out2, _ := Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("Marshal is not stable:\n%s\n%s", out, out2)
		}
	})
}

// TestMarshalRefuses: Marshal does not write what Parse would read back differently.
func TestMarshalRefuses(t *testing.T) {
	one := 1
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"bad device", Config{Devices: []Device{{Dev: "dsa"}}}, `device 1: "dsa" is not an accelerator name`},
		{"device twice", Config{Devices: []Device{{Dev: "dsa0"}, {Dev: "dsa0"}}}, "dsa0: listed twice"},
		{"group of another device", Config{Devices: []Device{{Dev: "dsa0", Groups: []Group{{Dev: "group1.0"}}}}}, "group1.0 belongs to device number 1"},
		{"bad wq", Config{Devices: []Device{{Dev: "dsa0", Groups: []Group{{Dev: "group0.0", WQs: []WQ{{Dev: "wq0"}}}}}}}, `"wq0" is not a wq name`},
		{"engine twice", Config{Devices: []Device{{Dev: "dsa0", Groups: []Group{{Dev: "group0.0", Engines: []Engine{{Dev: "engine0.0"}, {Dev: "engine0.0"}}}}}}}, "engine0.0 is listed twice"},
		{"extra shadows a field", Config{Devices: []Device{{Dev: "dsa0", Groups: []Group{{Dev: "group0.0", WQs: []WQ{{Dev: "wq0.0", Size: &one, Extra: map[string]json.RawMessage{"size": json.RawMessage("2")}}}}}}}}, `dsa0/group0.0/wq0.0: Extra holds "size"`},
		{"extra shadows groups", Config{Devices: []Device{{Dev: "dsa0", Extra: map[string]json.RawMessage{"groups": json.RawMessage("[]")}}}}, `dsa0: Extra holds "groups"`},
		{"extra not JSON", Config{Devices: []Device{{Dev: "dsa0", Extra: map[string]json.RawMessage{"x": json.RawMessage("{")}}}}, `dsa0: Extra "x" is not JSON`},
	} {
		if _, err := Marshal(tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
