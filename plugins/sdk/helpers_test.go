package sdk_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

type vethOptions struct {
	Netns   string        `option:"netns,required" doc:"network namespace of the peer"`
	Address *netip.Prefix `option:"address" doc:"address of the peer, CIDR"`
	MTU     int           `option:"mtu"`
	Up      bool          `option:"up"`
	Queues  uint8         `option:"queues"`
	Wait    time.Duration `option:"wait"`
	Tags    []string      `option:"tags"`
	Ratio   float64       `option:"ratio"`
	NoTag   string        // not an option: left alone
}

func TestDecodeOptions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     map[string]string
		want     vethOptions
		problems []api.Problem
	}{
		{
			name: "all",
			opts: map[string]string{"netns": "blue", "address": "10.0.0.2/24", "mtu": "9000", "up": "true",
				"queues": "4", "wait": "1.5s", "tags": "a, b,,c", "ratio": "0.25"},
			want: vethOptions{Netns: "blue", Address: ptr(netip.MustParsePrefix("10.0.0.2/24")), MTU: 9000, Up: true,
				Queues: 4, Wait: 1500 * time.Millisecond, Tags: []string{"a", "b", "c"}, Ratio: 0.25},
		},
		{name: "defaults kept", opts: map[string]string{"netns": "blue"}, want: vethOptions{Netns: "blue", MTU: 1500}},
		{
			name: "problems",
			opts: map[string]string{"address": "10.0.0.300/24", "queues": "300", "up": "maybe", "wait": "soon", "color": "red"},
			problems: []api.Problem{
				{Field: "options.netns", Message: "is required"},
				{Field: "options.address", Message: `"10.0.0.300/24": netip.ParsePrefix("10.0.0.300/24"): ParseAddr("10.0.0.300"): IPv4 field has value >255`},
				{Field: "options.up", Message: `"maybe" is not true or false`},
				{Field: "options.queues", Message: `"300" is not a non-negative integer of 8 bits`},
				{Field: "options.wait", Message: `"soon" is not a duration such as 1.5s or 300ms`},
				{Field: "options.color", Message: "unknown option (known: address, mtu, netns, queues, ratio, tags, up, wait)"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := vethOptions{MTU: 1500}
			err := sdk.DecodeOptions(tc.opts, &got)
			problems, perr := sdk.ProblemsOf(err)
			if perr != nil || !reflect.DeepEqual(problems, tc.problems) {
				t.Fatalf("problems = %+v (%v), want %+v", problems, perr, tc.problems)
			}
			if tc.problems == nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decoded %+v, want %+v", got, tc.want)
			}
			if tc.problems != nil && api.CodeOf(err) != api.InvalidArgument {
				t.Errorf("code %v, want invalid_argument", api.CodeOf(err))
			}
		})
	}
	t.Run("bad destination", func(t *testing.T) {
		var notStruct int
		if err := sdk.DecodeOptions(nil, &notStruct); api.CodeOf(err) != api.Internal {
			t.Errorf("DecodeOptions(*int): %v, want internal", err)
		}
		var unsupported struct {
			M map[string]string `option:"m"`
		}
		if err := sdk.DecodeOptions(nil, &unsupported); api.CodeOf(err) != api.Internal {
			t.Errorf("DecodeOptions(map field): %v, want internal", err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestPortType(t *testing.T) {
	ot, err := sdk.PortType("veth", vethOptions{}, "a veth pair")
	schema, serr := sdk.OptionsSchema(vethOptions{})
	if err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if want := (api.ObjectType{Name: "veth", Kind: api.ObjectKindPort, OptionsSchema: schema, Doc: "a veth pair"}); ot != want {
		t.Errorf("PortType = %+v, want %+v", ot, want)
	}
	if _, err := sdk.PortType("bad", 42, ""); err == nil {
		t.Error("PortType of a non-struct: no error")
	}
}

func TestOptionsSchema(t *testing.T) {
	s, err := sdk.OptionsSchema(vethOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
			Pattern     string `json:"pattern"`
		} `json:"properties"`
		Required   []string `json:"required"`
		Additional bool     `json:"additionalProperties"`
	}
	if err := json.Unmarshal([]byte(s), &schema); err != nil {
		t.Fatalf("schema is not JSON: %v\n%s", err, s)
	}
	if len(schema.Properties) != 8 || schema.Properties["netns"].Description != "network namespace of the peer" ||
		schema.Properties["mtu"].Pattern == "" || !reflect.DeepEqual(schema.Required, []string{"netns"}) || schema.Additional {
		t.Errorf("schema = %s", s)
	}
}

func TestDecodeConfig(t *testing.T) {
	type config struct {
		Devices []struct {
			PF string `json:"pf"`
		} `json:"devices"`
		Level string `json:"level"`
	}
	for _, tc := range []struct {
		in, field string
	}{
		{`{"devices":[{"pf":3}]}`, "config.devices.0.pf"}, // Go 1.27's decoder names the element
		{`{"level":"x","other":1}`, "config.other"},
		{`{"level":`, "config"},
		{`{"level":"x"} {}`, "config"},
	} {
		var c config
		err := sdk.DecodeConfig([]byte(tc.in), &c)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.InvalidArgument || len(e.Problems) != 1 || e.Problems[0].Field != tc.field {
			t.Errorf("DecodeConfig(%s) = %#v, want a problem on %s", tc.in, err, tc.field)
		}
	}
	c := config{Level: "info"}
	if err := sdk.DecodeConfig([]byte(" null "), &c); err != nil || c.Level != "info" {
		t.Errorf("DecodeConfig(null) = %v, %+v; want defaults kept", err, c)
	}
	if err := sdk.DecodeConfig([]byte(`{"devices":[{"pf":"0000:3b:00.0"}]}`), &c); err != nil || c.Devices[0].PF != "0000:3b:00.0" || c.Level != "info" {
		t.Errorf("DecodeConfig = %v, %+v", err, c)
	}
}

// TestLoggerFormat checks that NewLogger writes what go-plugin's host parses as a structured
// record: JSON with @level, @message and @timestamp in hclog's layout.
func TestLoggerFormat(t *testing.T) {
	var buf bytes.Buffer
	log := sdk.NewLogger(&buf, slog.LevelDebug)
	log.Warn("vf missing", "pf", "0000:3b:00.0", "vf", 3)
	log.Debug("probe")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines = %q", lines)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["@level"] != "warn" || rec["@message"] != "vf missing" || rec["pf"] != "0000:3b:00.0" || rec["vf"] != 3.0 {
		t.Errorf("record = %v", rec)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", rec["@timestamp"].(string)); err != nil {
		t.Errorf("@timestamp: %v", err)
	}
	if !strings.Contains(lines[1], `"@level":"debug"`) {
		t.Errorf("debug record = %s", lines[1])
	}
}

func TestState(t *testing.T) {
	type st struct {
		VF int `json:"vf"`
	}
	b, err := sdk.EncodeState(st{VF: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got st
	if ok, err := sdk.DecodeState(api.PortRequest{State: b}, &got); !ok || err != nil || got.VF != 3 {
		t.Errorf("DecodeState = %v, %v, %+v", ok, err, got)
	}
	if ok, err := sdk.DecodeState(api.PortRequest{}, &got); ok || err != nil {
		t.Errorf("DecodeState(no state) = %v, %v", ok, err)
	}
	if _, err := sdk.DecodeState(api.PortRequest{Name: "p", State: []byte("{")}, &got); api.CodeOf(err) != api.FailedPrecondition {
		t.Errorf("DecodeState(bad) = %v, want failed_precondition", err)
	}
	if _, err := sdk.EncodeState(strings.Repeat("x", api.MaxStateSize)); api.CodeOf(err) != api.Internal {
		t.Errorf("EncodeState(too big) = %v, want internal", err)
	}
	p := sdk.SinglePort("vdpa0", "dpdk", map[string]string{"dpdk-devargs": "0000:3b:00.0,representor=vf3"})
	if p.Name != "vdpa0" || len(p.Interfaces) != 1 || p.Interfaces[0].Name != "vdpa0" || p.Interfaces[0].Type != "dpdk" {
		t.Errorf("SinglePort = %+v", p)
	}
}
