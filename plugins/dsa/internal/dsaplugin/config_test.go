package dsaplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// problemOn reports whether err is InvalidArgument with a problem on field.
func problemOn(err error, field string) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == api.InvalidArgument &&
		slices.ContainsFunc(e.Problems, func(p api.Problem) bool { return p.Field == field })
}

// TestParseConfig: a full configuration decodes with its defaults; every malformed field is a
// problem naming it; unknown fields, oversized text and too many devices are refused before
// anything is applied.
func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"devices": [{"dsa": "dsa0", "wqs": {"count": 4, "size": 32, "priority": 10, "maxBatchSize": 32, "atsDisable": true, "namePrefix": "dpdk"}, "numa": 0},
		{"dsa": "0000:6a:02.0", "driver": "vfio-pci", "wqs": {"count": 2}}], "ovs": {"asyncMode": "require", "threshold": 256, "user": "openvswitch", "unixctl": "/var/run/openvswitch//ovs-vswitchd.zs.ctl"}, "allowReconfigure": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Root != "/" || c.asyncMode() != AsyncRequire || c.OVS.Threshold != 256 || len(c.Devices) != 2 ||
		c.Devices[0].driver() != DriverIDXD || c.Devices[1].driver() != DriverVFIO || *c.Devices[0].NUMA != 0 ||
		c.OVS.Unixctl != "/var/run/openvswitch/ovs-vswitchd.zs.ctl" {
		t.Errorf("config %+v", c)
	}
	req := c.Request(nil)
	if !req.AllowReconfigure || req.Devices[0].WQs.Count != 4 || !req.Devices[0].WQs.ATSDisable || req.Devices[1].Driver != DriverVFIO {
		t.Errorf("request %+v", req)
	}
	if c, err := ParseConfig(nil); err != nil || c.asyncMode() != AsyncAuto || len(c.Devices) != 0 {
		t.Errorf("empty config: %+v, %v", c, err)
	}

	many := `{"devices": [` + strings.Repeat(`{"dsa": "dsa1"},`, MaxDevices) + `{"dsa": "dsa2"}]}`
	for cfg, field := range map[string]string{
		`{"devices": [{"dsa": "dsa0", "driver": "uio"}]}`:                     "config.devices[0].driver",
		`{"devices": [{"dsa": "wq0.0"}]}`:                                     "config.devices[0].dsa",
		`{"devices": [{"dsa": ""}]}`:                                          "config.devices[0].dsa",
		`{"devices": [{"dsa": "dsa0"}, {"dsa": "dsa0"}]}`:                     "config.devices[1].dsa",
		`{"devices": [{"dsa": "dsa0", "wqs": {"count": -1}}]}`:                "config.devices[0].wqs.count",
		`{"devices": [{"dsa": "dsa0", "wqs": {"count": "4"}}]}`:               "config.devices[0].wqs.count",
		`{"devices": [{"dsa": "dsa0", "wqs": {"colour": 4}}]}`:                "config.devices[0].wqs.colour",
		`{"devices": [{"dsa": "dsa0", "numa": 5000}]}`:                        "config.devices[0].numa",
		`{"devices": [{"dsa": "dsa0", "engines": -2}]}`:                       "config.devices[0].engines",
		`{"ovs": {"asyncMode": "always"}}`:                                    "config.ovs.asyncMode",
		`{"ovs": {"threshold": 100000}}`:                                      "config.ovs.threshold",
		`{"ovs": {"user": "root; rm -rf /"}}`:                                 "config.ovs.user",
		`{"ovs": {"unixctl": "ovs-vswitchd.zs.ctl"}}`:                         "config.ovs.unixctl",
		`{"ovs": {"unixctl": "/run/ovs\nctl"}}`:                               "config.ovs.unixctl",
		`{"ovs": {"unixctl": "/` + strings.Repeat("s", MaxSocketPath) + `"}}`: "config.ovs.unixctl",
		`{"ovs": {"unixctl": 7}}`:                                             "config.ovs.unixctl",
		`{"root": "sys"}`:                                                     "config.root",
		`{"root": "/nonexistent/ovsplane"}`:                                   "config.root",
		`{"simulate": "relative/dir"}`:                                        "config.simulate",
		`{"simulate": "/tmp/x", "root": "/tmp"}`:                              "config.root",
		`{"allowReconfigure": "yes"}`:                                         "config.allowReconfigure",
		`{"device": []}`:                                                      "config.device",
		many:                                                                  "config.devices",
		`{"ovs": {}} {"trailing": 1}`:                                         "config",
		`{"devices": [{"dsa": "dsa0", "wqs": {"namePrefix": "` + strings.Repeat("d", 65) + `"}}]}`: "config.devices[0].wqs.namePrefix",
	} {
		if _, err := ParseConfig([]byte(cfg)); !problemOn(err, field) {
			t.Errorf("%.80s: %v, want a problem on %s", cfg, err, field)
		}
	}
	huge := fmt.Sprintf(`{"devices": [], "root": "/", "simulate": "%s"}`, strings.Repeat("x", MaxConfigBytes))
	if _, err := ParseConfig([]byte(huge)); !problemOn(err, "config") || !strings.Contains(err.Error(), "more than") {
		t.Errorf("oversized config: %v", err)
	}
}

// TestConfigSchema: the schema is JSON and lists exactly Config's fields, so the two cannot
// drift apart silently.
func TestConfigSchema(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Items      struct {
				Properties map[string]struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(configSchema), &s); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		b, _ := json.Marshal(v)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	n := 1
	full := Config{Devices: []DeviceConfig{{DSA: "dsa0", Driver: "idxd", Engines: 1, NUMA: &n,
		WQs: WQConfig{Count: 1, Mode: "m", Size: 1, Priority: 1, MaxBatchSize: 1, ATSDisable: true, NamePrefix: "p"}}},
		OVS: OVSConfig{AsyncMode: "auto", Threshold: 1, User: "u", Unixctl: "/c"}, AllowReconfigure: true, Root: "/", Simulate: "/s"}
	var top []string
	for k := range s.Properties {
		top = append(top, k)
	}
	slices.Sort(top)
	if got, want := top, keys(full); !slices.Equal(got, want) {
		t.Errorf("schema fields %v, Config fields %v", got, want)
	}
	if got, want := sorted(s.Properties["ovs"].Properties), keys(full.OVS); !slices.Equal(got, want) {
		t.Errorf("schema ovs fields %v, OVSConfig fields %v", got, want)
	}
	dev := s.Properties["devices"].Items.Properties
	var devKeys []string
	for k := range dev {
		devKeys = append(devKeys, k)
	}
	slices.Sort(devKeys)
	if want := keys(full.Devices[0]); !slices.Equal(devKeys, want) {
		t.Errorf("schema device fields %v, DeviceConfig fields %v", devKeys, want)
	}
	if got, want := sorted(dev["wqs"].Properties), keys(full.Devices[0].WQs); !slices.Equal(got, want) {
		t.Errorf("schema wqs fields %v, WQConfig fields %v", got, want)
	}
}

// TestLookupPasswd: a user name gives its uid and primary gid; an unknown one says how to fix.
func TestLookupPasswd(t *testing.T) {
	const passwd = "root:x:0:0:root:/root:/bin/bash\nopenvswitch:x:115:120:OVS:/var/lib/openvswitch:/usr/sbin/nologin\n"
	o, err := lookupPasswd(strings.NewReader(passwd), "openvswitch")
	if err != nil || o.UID != 115 || o.GID != 120 {
		t.Errorf("openvswitch: %+v, %v", o, err)
	}
	if _, err := lookupPasswd(strings.NewReader(passwd), "ovs"); err == nil || !strings.Contains(err.Error(), "uid:gid") {
		t.Errorf("unknown user: %v", err)
	}
	if o, err := parseUser("/", "115:120"); err != nil || o.UID != 115 || o.GID != 120 {
		t.Errorf("uid:gid: %+v, %v", o, err)
	}
}
