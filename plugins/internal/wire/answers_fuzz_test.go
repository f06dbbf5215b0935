package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/ovsplane/ovsplane/plugins/api"
	pb "github.com/ovsplane/ovsplane/plugins/api/gen/ovsplane/plugin/v1"
)

// Kinds of plugin answer a FuzzPluginAnswer input is decoded as (kind modulo answerKinds).
// Keep the order: the seed corpus in testdata depends on it.
const (
	answerAttach     = iota // PortProvider.Attach → AttachResponse (the port's OVS shape)
	answerInfo              // Plugin.GetInfo → GetInfoResponse
	answerContribute        // GlobalConfig.Contribute → ContributeResponse
	answerList              // PortProvider.List → ListResponse
	answerPortEvents        // Watcher.OnPortEvents → PortEventsResponse
	answerValidate          // PortProvider.Validate → ValidateResponse
	answerStatus            // any call failing with a google.rpc.Status (code, message, details)
	answerKinds
)

// wire is the gRPC side of a plugin that answers every call with the same bytes, decoded as
// grpc's proto codec decodes them. It implements the generated client interfaces the shims
// call (the methods the fuzzer does not use are the nil embedded interfaces').
type wire struct {
	pb.PluginClient
	pb.PortProviderClient
	pb.WatcherClient
	pb.GlobalConfigClient
	data   []byte
	status bool // data is a google.rpc.Status: every call fails with it
}

func answer[T proto.Message](w *wire, m T) (T, error) {
	var zero T
	if w.status {
		st := status.New(codes.OK, "").Proto() // a google.rpc.Status (genproto is no direct dependency)
		if err := proto.Unmarshal(w.data, st); err != nil {
			return zero, status.Errorf(codes.Internal, "grpc: error unmarshalling status: %v", err)
		}
		if st.GetCode() == 0 { // grpc-go reports an OK status as success, with no message
			return zero, status.Error(codes.Internal, "grpc: OK status with no message")
		}
		return zero, status.ErrorProto(st)
	}
	if err := proto.Unmarshal(w.data, m); err != nil {
		return zero, status.Errorf(codes.Internal, "grpc: error unmarshalling response: %v", err)
	}
	return m, nil
}

func (w *wire) GetInfo(context.Context, *pb.GetInfoRequest, ...grpc.CallOption) (*pb.GetInfoResponse, error) {
	return answer(w, &pb.GetInfoResponse{})
}
func (w *wire) Attach(context.Context, *pb.AttachRequest, ...grpc.CallOption) (*pb.AttachResponse, error) {
	return answer(w, &pb.AttachResponse{})
}
func (w *wire) Validate(context.Context, *pb.ValidateRequest, ...grpc.CallOption) (*pb.ValidateResponse, error) {
	return answer(w, &pb.ValidateResponse{})
}
func (w *wire) List(context.Context, *pb.ListRequest, ...grpc.CallOption) (*pb.ListResponse, error) {
	return answer(w, &pb.ListResponse{})
}
func (w *wire) OnPortEvents(context.Context, *pb.PortEventsRequest, ...grpc.CallOption) (*pb.PortEventsResponse, error) {
	return answer(w, &pb.PortEventsResponse{})
}
func (w *wire) Contribute(context.Context, *pb.ContributeRequest, ...grpc.CallOption) (*pb.ContributeResponse, error) {
	return answer(w, &pb.ContributeResponse{})
}

// namePattern is the form ValidateInfo promises for plugin and type names, restated here so
// the fuzzer checks the promise independently of the code that keeps it.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// The request and facts the answers are checked against.
var (
	fuzzFacts = api.HostFacts{OVSVersion: "3.1.0", IfaceTypes: []string{"internal", "dpdk", "dpdkvhostuserclient", "patch", "system", "tap", "vxlan"}}
	fuzzReq   = api.PortRequest{Bridge: "br0", Name: "vm1", Type: "vdpa", Options: map[string]string{"pf": "0000:65:00.0"}}
	fuzzBatch = api.PortEventBatch{Events: []api.PortEvent{
		{Kind: api.EventAdded, Bridge: "br0", Port: "p1", Interface: "p1", Type: "dpdk"},
		{Kind: api.EventRemoved, Bridge: "br0", Port: "p2", Interface: "p2"},
	}}
)

// FuzzPluginAnswer feeds arbitrary bytes as a plugin's answer through the host-side gRPC
// shims (the protobuf decoding, convert.go's conversions, the status and error-detail
// decoding) and then the host's checks on the answer (validate.go: ValidateAttachment,
// ValidateInfo, ValidateGlobalConfig, ValidateChanges). Nothing may panic; a refused answer
// is an *Error with code Internal listing problems that each name a field; an accepted
// answer really has the properties the checks promise (re-checked here independently) and
// survives the conversion back to protobuf unchanged; a failed call is an *Error with a
// gRPC code and the plugin's message and problems.
func FuzzPluginAnswer(f *testing.F) {
	for _, s := range pluginAnswerSeeds() {
		f.Add(s.kind, s.data)
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		k := int(kind) % answerKinds
		w := &wire{data: data, status: k == answerStatus}
		ctx := context.Background()
		if k == answerStatus {
			_, err := (&portClient{c: w}).Attach(ctx, fuzzReq)
			checkCallError(t, data, err)
			return
		}
		var err, verr error
		switch k {
		case answerAttach:
			var a api.Attachment
			if a, err = (&portClient{c: w}).Attach(ctx, fuzzReq); err == nil {
				if verr = api.ValidateAttachment(fuzzFacts, fuzzReq, a); verr == nil {
					checkAcceptedAttachment(t, a)
				}
			}
		case answerInfo:
			var info api.Info
			if info, err = (&baseClient{c: w}).Info(ctx); err == nil {
				if verr = api.ValidateInfo(info); verr == nil {
					checkAcceptedInfo(t, info)
				}
			}
		case answerContribute:
			var g api.GlobalConfig
			if g, err = (&globalClient{c: w}).Contribute(ctx); err == nil {
				if verr = api.ValidateGlobalConfig(g); verr == nil {
					for key := range g.OtherConfig {
						if key == "" || key == "dpdk-extra" {
							t.Fatalf("accepted global config with key %q", key)
						}
					}
					for i, frag := range g.DPDKExtra {
						if strings.TrimSpace(frag) == "" {
							t.Fatalf("accepted global config with blank dpdk_extra[%d] %q", i, frag)
						}
					}
				}
			}
		case answerList:
			var owned []api.OwnedPort
			if owned, err = (&portClient{c: w}).List(ctx); err == nil {
				if back := ownedFromProto(ownedToProto(owned)); !reflect.DeepEqual(back, owned) {
					t.Fatalf("owned ports changed in a round trip:\n%#v\n%#v", owned, back)
				}
			}
		case answerPortEvents:
			var changes []api.InterfaceChange
			if changes, err = (&watcherClient{c: w}).OnPortEvents(ctx, fuzzBatch); err == nil {
				if verr = api.ValidateChanges(fuzzBatch, changes); verr == nil {
					for _, c := range changes {
						if c.Interface != "p1" {
							t.Fatalf("accepted a change of %q, not a live interface of the batch", c.Interface)
						}
						for _, key := range c.Remove {
							if key == "" {
								t.Fatal("accepted a change removing an empty key")
							}
						}
						if _, ok := c.Set[""]; ok {
							t.Fatal("accepted a change setting an empty key")
						}
					}
				}
			}
		case answerValidate:
			var ps []api.Problem
			if ps, err = (&portClient{c: w}).Validate(ctx, fuzzReq); err == nil {
				if back := problemsFromProto(problemsToProto(ps)); !reflect.DeepEqual(back, ps) {
					t.Fatalf("problems changed in a round trip:\n%#v\n%#v", ps, back)
				}
			}
		}
		if err != nil { // the bytes are not the answer's message: the call fails, it does not panic
			var e *api.Error
			if !errors.As(err, &e) || e.Code != api.Internal {
				t.Fatalf("undecodable answer: %T %v", err, err)
			}
			return
		}
		if verr != nil {
			checkRefusal(t, verr)
		}
	})
}

// checkRefusal checks the error of a refused answer: code Internal (a malformed answer is a
// plugin bug) and every problem naming a field.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.Internal || len(e.Problems) == 0 {
		t.Fatalf("refusal is not an Internal *Error with problems: %T %v", err, err)
	}
	for _, p := range e.Problems {
		if p.Field == "" || p.Message == "" {
			t.Fatalf("problem without a field or message: %#v in %v", p, err)
		}
	}
}

// checkCallError checks what the shim makes of a failed call: an *Error with the status's
// code, message and problems.
func checkCallError(t *testing.T, data []byte, err error) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("a failed call gave %T %v", err, err)
	}
	st := status.New(codes.OK, "").Proto() // a google.rpc.Status (genproto is no direct dependency)
	if proto.Unmarshal(data, st) != nil || st.GetCode() == 0 {
		if e.Code != api.Internal {
			t.Fatalf("an undecodable status gave code %v", e.Code)
		}
		return
	}
	if uint32(e.Code) != uint32(st.GetCode()) || e.Message != st.GetMessage() {
		t.Fatalf("status %d %q became %v %q", st.GetCode(), st.GetMessage(), e.Code, e.Message)
	}
	want := 0
	for _, d := range st.GetDetails() {
		var detail pb.ErrorDetail
		if d.MessageIs(&detail) && d.UnmarshalTo(&detail) == nil {
			want += len(detail.GetProblems())
		}
	}
	if len(e.Problems) != want {
		t.Fatalf("%d problems in the details, %d in the error %v", want, len(e.Problems), e)
	}
	_ = e.Error()
}

// checkAcceptedAttachment re-checks what ValidateAttachment promises of an accepted answer,
// and that the answer survives the conversion back to protobuf.
func checkAcceptedAttachment(t *testing.T, a api.Attachment) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("accepted attachment %+v: %s", a, fmt.Sprintf(format, args...))
	}
	if len(a.Ports) == 0 {
		fail("no port")
	}
	if len(a.State) > api.MaxStateSize {
		fail("state of %d bytes", len(a.State))
	}
	reserved := func(m map[string]string) {
		for k := range m {
			if strings.HasPrefix(k, api.ReservedKeyPrefix) {
				fail("reserved key %q", k)
			}
		}
	}
	ports, ifaces := map[string]bool{}, map[string]bool{}
	for _, p := range a.Ports {
		if p.Name == "" || ports[p.Name] {
			fail("port name %q empty or repeated", p.Name)
		}
		ports[p.Name] = true
		if p.Tag != nil && (*p.Tag < 0 || *p.Tag > 4095) {
			fail("tag %d", *p.Tag)
		}
		reserved(p.ExternalIDs)
		if len(p.Interfaces) == 0 {
			fail("port %q without interfaces", p.Name)
		}
		for _, i := range p.Interfaces {
			if i.Name == "" || ifaces[i.Name] {
				fail("interface name %q empty or repeated", i.Name)
			}
			ifaces[i.Name] = true
			if i.Type != "" && i.Type != "system" && !fuzzFacts.HasIfaceType(i.Type) {
				fail("interface type %q", i.Type)
			}
			if i.OfportRequest != nil && (*i.OfportRequest < 1 || *i.OfportRequest > 65279) {
				fail("ofport_request %d", *i.OfportRequest)
			}
			if i.MTURequest != nil && (*i.MTURequest < 68 || *i.MTURequest > 65535) {
				fail("mtu_request %d", *i.MTURequest)
			}
			reserved(i.ExternalIDs)
		}
	}
	if back := attachmentFromProto(attachmentToProto(a)); !reflect.DeepEqual(back, a) {
		fail("changed in a round trip: %+v", back)
	}
}

// checkAcceptedInfo re-checks what ValidateInfo promises of an accepted Info.
func checkAcceptedInfo(t *testing.T, info api.Info) {
	t.Helper()
	if !namePattern.MatchString(info.Name) || info.Version == "" {
		t.Fatalf("accepted info with name %q, version %q", info.Name, info.Version)
	}
	seen := map[string]bool{}
	for _, ty := range info.Types {
		if !namePattern.MatchString(ty.Name) || seen[ty.Name] {
			t.Fatalf("accepted info with type name %q (invalid or repeated)", ty.Name)
		}
		seen[ty.Name] = true
		if ty.Kind != api.ObjectKindPort && ty.Kind != api.ObjectKindJob {
			t.Fatalf("accepted info with type kind %d", ty.Kind)
		}
		if ty.OptionsSchema != "" && !json.Valid([]byte(ty.OptionsSchema)) {
			t.Fatalf("accepted info with options schema %q", ty.OptionsSchema)
		}
	}
	if back := infoFromProto(infoToProto(info)); !reflect.DeepEqual(back, info) {
		t.Fatalf("info changed in a round trip:\n%#v\n%#v", info, back)
	}
}

func statusWith(c codes.Code, msg string, details ...*anypb.Any) proto.Message {
	st := status.New(c, msg).Proto()
	st.Details = details
	return st
}

type answerSeed struct {
	kind uint8
	data []byte
}

// pluginAnswerSeeds are well-formed answers of every kind; the malformed and hostile ones
// (huge counts, NUL, invalid UTF-8, ".." names, out-of-range numbers) are in
// testdata/fuzz/FuzzPluginAnswer.
func pluginAnswerSeeds() []answerSeed {
	i32 := func(v int32) *int32 { return &v }
	detail, err := anypb.New(&pb.ErrorDetail{Problems: []*pb.Problem{{Field: "options.pf", Message: "no such PCI device"}}})
	if err != nil {
		panic(err)
	}
	msgs := []struct {
		kind int
		m    proto.Message
	}{
		{answerAttach, &pb.AttachResponse{State: []byte(`{"vf":3}`), Status: "vf 3 of 0000:65:00.0",
			Endpoints: map[string]string{"vhost": "/dev/vhost-vdpa-3"},
			Ports: []*pb.OvsPort{{Bridge: "br0", Name: "vm1", Tag: i32(10), Trunks: []int32{1, 2},
				Interfaces: []*pb.OvsInterface{{Name: "vm1", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:65:00.3"},
					MtuRequest: i32(9000), OfportRequest: i32(12), ExternalIds: map[string]string{"vm": "a"}}}}}}},
		{answerAttach, &pb.AttachResponse{Ports: []*pb.OvsPort{{Name: "bond0", BondMode: "balance-tcp", Lacp: "active",
			Interfaces: []*pb.OvsInterface{{Name: "e1", Type: "dpdk"}, {Name: "e2", Type: "dpdk"}}}}}},
		{answerAttach, &pb.AttachResponse{Ports: []*pb.OvsPort{{Name: "vm1", Tag: i32(4096),
			Interfaces: []*pb.OvsInterface{{Name: "vm1", Type: "vdpa", OfportRequest: i32(65280), MtuRequest: i32(67),
				ExternalIds: map[string]string{"ovsplane-owner": "me"}}}}}}},
		{answerInfo, &pb.GetInfoResponse{Info: &pb.PluginInfo{Name: "vdpa", Version: "1.0.0", ApiVersions: []string{"1"},
			Capabilities: []pb.Capability{pb.Capability(api.CapabilityPortProvider), pb.Capability(api.CapabilityGlobalConfig)},
			Types:        []*pb.ObjectType{{Name: "vdpa", Kind: pb.ObjectKind(api.ObjectKindPort), OptionsSchema: `{"type":"object"}`}}}}},
		{answerInfo, &pb.GetInfoResponse{Info: &pb.PluginInfo{Name: "Bad Name", Types: []*pb.ObjectType{{Name: "x", Kind: 7, OptionsSchema: "{"}}}}},
		{answerContribute, &pb.ContributeResponse{OtherConfig: map[string]string{"hw-offload": "true"}, DpdkExtra: []string{"-a 0000:65:00.0"}}},
		{answerContribute, &pb.ContributeResponse{OtherConfig: map[string]string{"": "x", "dpdk-extra": "--foo"}, DpdkExtra: []string{" "}}},
		{answerList, &pb.ListResponse{Ports: []*pb.OwnedPort{{Bridge: "br0", Name: "vm1", Type: "vdpa", State: []byte("s"), Status: "ok"}}}},
		{answerPortEvents, &pb.PortEventsResponse{Changes: []*pb.InterfaceChange{{Interface: "p1",
			SetOtherConfig: map[string]string{"pmd-rxq-affinity": "0:3"}, RemoveOtherConfig: []string{"old"}}}}},
		{answerPortEvents, &pb.PortEventsResponse{Changes: []*pb.InterfaceChange{{Interface: "p2", RemoveOtherConfig: []string{""}}}}},
		{answerValidate, &pb.ValidateResponse{Problems: []*pb.Problem{{Field: "options.pf", Message: "required"}}}},
		{answerStatus, statusWith(codes.InvalidArgument, "bad pf", detail)},
		{answerStatus, statusWith(99, "a code gRPC does not have")},
	}
	var seeds []answerSeed
	for _, m := range msgs {
		b, err := proto.Marshal(m.m)
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, answerSeed{uint8(m.kind), b})
	}
	return seeds
}
