package daemoncmd

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
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
