package daemoncmd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ovsplane/ovsplane/api/convert"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// The thin client's wire structs are written by hand so that vsctl need not link the protobuf
// runtime; this test keeps them complete. Every field of the API's Bridge, Port and Interface
// messages must have a field in the request structs (by its proto name, as sent) and, for
// Port and Interface, in the reply structs (by its JSON name, as the server writes it): a new
// field in switch.proto that the structs miss would otherwise be dropped silently.
func TestWireStructsCoverTheProto(t *testing.T) {
	check := func(what string, msg protoreflect.MessageDescriptor, typ reflect.Type, jsonNames bool) {
		t.Helper()
		tags := map[string]bool{}
		for f := range typ.Fields() {
			tags[strings.Split(f.Tag.Get("json"), ",")[0]] = true
		}
		fields := msg.Fields()
		for i := range fields.Len() {
			f := fields.Get(i)
			name := string(f.Name())
			if jsonNames {
				name = f.JSONName()
			}
			if !tags[name] {
				t.Errorf("%s: no field for %s.%s (json %q)", what, msg.Name(), f.Name(), name)
			}
		}
	}
	check("wireBridge", (&v1.Bridge{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireBridge](), false)
	check("wirePortReq", (&v1.Port{}).ProtoReflect().Descriptor(), reflect.TypeFor[wirePortReq](), false)
	check("wireInterfaceReq", (&v1.Interface{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireInterfaceReq](), false)
	check("wirePort", (&v1.Port{}).ProtoReflect().Descriptor(), reflect.TypeFor[wirePort](), true)
	check("wirePort.Interfaces", (&v1.Interface{}).ProtoReflect().Descriptor(),
		reflect.TypeFor[wirePort]().Field(reflect.TypeFor[wirePort]().NumField()-1).Type.Elem(), true)
	check("wirePluginInfo", (&v1.PluginInfo{}).ProtoReflect().Descriptor(), reflect.TypeFor[wirePluginInfo](), true)
	check("wireJobInfo", (&v1.JobInfo{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireJobInfo](), true)
	check("wireJobMetric", (&v1.JobMetric{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireJobMetric](), true)
}

// The QoS wire structs cover the QoS and Queue messages both ways, and a port the server
// writes (protojson: int64 fields as strings) reads back into the same QoS and ingress
// policing (add-port --may-exist re-applies what it read: a field lost here would be erased).
func TestWireQoSRoundTrip(t *testing.T) {
	for _, c := range []struct {
		what string
		msg  protoreflect.MessageDescriptor
		typ  reflect.Type
		json bool
	}{
		{"wireQoS", (&v1.QoS{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireQoS](), false},
		{"wireQueue", (&v1.Queue{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireQueue](), false},
		{"wireQoSResp", (&v1.QoS{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireQoSResp](), true},
		{"wireMirror", (&v1.Mirror{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireMirror](), false},
		{"wireBond", (&v1.Bond{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireBond](), false},
		{"wireBondResp", (&v1.Bond{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireBondResp](), true},
		{"wireQoSResp.Queues", (&v1.Queue{}).ProtoReflect().Descriptor(), reflect.TypeFor[wireQoSResp]().Field(reflect.TypeFor[wireQoSResp]().NumField() - 1).Type.Elem(), true},
	} {
		tags := map[string]bool{}
		for f := range c.typ.Fields() {
			tags[strings.Split(f.Tag.Get("json"), ",")[0]] = true
		}
		for i := range c.msg.Fields().Len() {
			f := c.msg.Fields().Get(i)
			name := string(f.Name())
			if c.json {
				name = f.JSONName()
			}
			if !tags[name] {
				t.Errorf("%s: no field for %s.%s (json %q)", c.what, c.msg.Name(), f.Name(), name)
			}
		}
	}

	n := func(v int) *int { return &v }
	p := model.Port{Name: "p0", Bond: &model.Bond{Updelay: n(5), DetectMode: "carrier", RebalanceInterval: n(1<<31 - 1),
		LACPTime: "slow", LACPFallbackAB: new(true), Primary: "p0"}, QoS: &model.QoS{Type: "linux-htb", MaxRate: n(1e12), Queues: []model.Queue{
		{ID: 1<<32 - 1, MinRate: n(5), MaxRate: n(6), Burst: n(7), Priority: n(3), DSCP: n(46)},
		{ID: 2, CIR: n(1), CBS: n(2), EIR: n(3), EBS: n(4)}}},
		Interfaces: []model.Interface{{Name: "p0", IngressPolicingRate: n(1<<32 - 1), IngressPolicingBurst: n(9),
			IngressPolicingKpktsRate: n(8), IngressPolicingKpktsBurst: n(1)}}}
	b, err := protojson.Marshal(convert.PortToProto(p))
	if err != nil {
		t.Fatal(err)
	}
	var w wirePort
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("reading %s: %v", b, err)
	}
	if got := portFromWire(&w); !reflect.DeepEqual(got.Canonical(), p.Canonical()) {
		t.Errorf("read back %+v\nwant %+v\n(from %s)", got.Canonical(), p.Canonical(), b)
	}
	// The request form reaches the same port through the server's decoder.
	req, err := json.Marshal(portToWire(p))
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Port
	if err := protojson.Unmarshal(req, &m); err != nil {
		t.Fatalf("server reading %s: %v", req, err)
	}
	if got := convert.PortFromProto(&m); !reflect.DeepEqual(got.Canonical(), p.Canonical()) {
		t.Errorf("server read %+v\nwant %+v", got.Canonical(), p.Canonical())
	}
}
