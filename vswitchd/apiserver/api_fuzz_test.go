package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/embedded"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/vswitchdtest"
)

// fuzzMethod is one RPC of ovsplane.v1.SwitchService with fresh request and response messages.
type fuzzMethod struct {
	name      string
	streaming bool
	req, resp func() proto.Message
}

// fuzzMethods lists every RPC; a fuzz input picks one by index (modulo the length), so keep
// the order stable: the seed corpus in testdata depends on it.
var fuzzMethods = []fuzzMethod{
	{"ApplyBridge", false, func() proto.Message { return &v1.ApplyBridgeRequest{} }, func() proto.Message { return &v1.ApplyBridgeResponse{} }},
	{"GetBridge", false, func() proto.Message { return &v1.GetBridgeRequest{} }, func() proto.Message { return &v1.GetBridgeResponse{} }},
	{"ListBridges", false, func() proto.Message { return &v1.ListBridgesRequest{} }, func() proto.Message { return &v1.ListBridgesResponse{} }},
	{"DeleteBridge", false, func() proto.Message { return &v1.DeleteBridgeRequest{} }, func() proto.Message { return &v1.DeleteBridgeResponse{} }},
	{"ApplyPort", false, func() proto.Message { return &v1.ApplyPortRequest{} }, func() proto.Message { return &v1.ApplyPortResponse{} }},
	{"GetPort", false, func() proto.Message { return &v1.GetPortRequest{} }, func() proto.Message { return &v1.GetPortResponse{} }},
	{"ListPorts", false, func() proto.Message { return &v1.ListPortsRequest{} }, func() proto.Message { return &v1.ListPortsResponse{} }},
	{"DeletePort", false, func() proto.Message { return &v1.DeletePortRequest{} }, func() proto.Message { return &v1.DeletePortResponse{} }},
	{"ListStatus", false, func() proto.Message { return &v1.ListStatusRequest{} }, func() proto.Message { return &v1.ListStatusResponse{} }},
	{"WaitReady", false, func() proto.Message { return &v1.WaitReadyRequest{} }, func() proto.Message { return &v1.WaitReadyResponse{} }},
	{"Watch", true, func() proto.Message { return &v1.WatchRequest{} }, func() proto.Message { return &v1.WatchResponse{} }},
	{"Reload", false, func() proto.Message { return &v1.ReloadRequest{} }, func() proto.Message { return &v1.ReloadResponse{} }},
	{"Health", false, func() proto.Message { return &v1.HealthRequest{} }, func() proto.Message { return &v1.HealthResponse{} }},
	{"ListPlugins", false, func() proto.Message { return &v1.ListPluginsRequest{} }, func() proto.Message { return &v1.ListPluginsResponse{} }},
}

// Wire protocols a fuzz input can use (mode modulo 6): Connect, gRPC and gRPC-Web, each with
// the JSON and the binary protobuf codec.
const (
	protoConnect = iota
	protoGRPC
	protoGRPCWeb
)

// fuzzMode decodes a fuzz input's mode: the protocol and codec (mode modulo 6), and whether
// the caller has the reader role instead of admin (the next bit).
func fuzzMode(mode uint8) (protocol int, json, reader bool) {
	m := int(mode) % 6
	return m / 2, m%2 == 0, (int(mode)/6)%2 == 1
}

// apiHarness is a real daemon (vswitchd.Daemon) on the embedded OVSDB with the simulated
// ovs-vswitchd, served by the real apiserver.Server, called in memory through ServeHTTP.
type apiHarness struct {
	db     *embedded.DB
	client *ovsdb.Client
	d      *vswitchd.Daemon
	admin  *apiserver.Server // every call allowed
	reader *apiserver.Server // read calls allowed, writes refused
	cfg    *config.Config
}

// The configuration's bridge and port, and a bridge with a port that another writer
// (ovs-vsctl, say) created: requests naming them must be refused without touching them.
const (
	fuzzCfgBridge     = "br-cfg"
	fuzzCfgPort       = "cfg0"
	fuzzForeignBridge = "br-foreign"
	fuzzForeignPort   = "eth-foreign"
)

func fuzzConfig() *config.Config {
	return &config.Config{Bridges: []model.Bridge{{Name: fuzzCfgBridge, DatapathType: "netdev",
		Ports: []model.Port{{Name: fuzzCfgPort, Interfaces: []model.Interface{{Name: fuzzCfgPort, Type: "internal"}}}}}}}
}

func newAPIHarness(tb testing.TB) *apiHarness {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	h := &apiHarness{cfg: fuzzConfig()}
	h.db, h.client = vswitchdtest.EmbeddedSim(tb, ctx, quiet)
	if err := ovsdbtest.Transact(h.db.Endpoint(), foreignRowsOps(), nil); err != nil {
		tb.Fatalf("creating rows ovsplane does not own: %v", err)
	}
	h.d = vswitchdtest.RunDaemon(tb, ctx, h.client, h.cfg, vswitchd.Options{
		Logger:    quiet,
		Mode:      model.ModeEmbedded,
		Commit:    ovsdb.CommitOptions{ApplyTimeout: 30 * time.Second},
		Reload:    func(context.Context) (*config.Config, error) { return fuzzConfig(), nil },
		Reconcile: vswitchdtest.FastReconcile(),
	})
	// Calls through ServeHTTP carry no peer identity: Unidentified is their role.
	h.admin = apiserver.New(h.d, apiserver.Options{Logger: quiet, Unidentified: apiserver.RoleAdmin})
	h.reader = apiserver.New(h.d, apiserver.Options{Logger: quiet, Unidentified: apiserver.RoleReader})
	return h
}

// foreignRowsOps creates fuzzForeignBridge with port fuzzForeignPort, without ovsplane's tags.
func foreignRowsOps() []any {
	return []any{
		map[string]any{"op": "insert", "table": "Interface", "uuid-name": "i",
			"row": map[string]any{"name": fuzzForeignPort, "type": "internal"}},
		map[string]any{"op": "insert", "table": "Port", "uuid-name": "p",
			"row": map[string]any{"name": fuzzForeignPort, "interfaces": []any{"named-uuid", "i"}}},
		map[string]any{"op": "insert", "table": "Bridge", "uuid-name": "b",
			"row": map[string]any{"name": fuzzForeignBridge, "ports": []any{"named-uuid", "p"}}},
		map[string]any{"op": "mutate", "table": "Open_vSwitch", "where": []any{},
			"mutations": []any{[]any{"bridges", "insert", []any{"named-uuid", "b"}}}},
	}
}

// reset deletes every object created through the API, so that inputs do not pile up state.
func (h *apiHarness) reset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range h.d.Ports("") {
		if p.Origin == model.OriginAPI {
			if err := h.d.DeletePort(ctx, p.Spec.Name); err != nil {
				t.Fatalf("reset: delete port %q: %v", p.Spec.Name, err)
			}
		}
	}
	for _, b := range h.d.Bridges() {
		if b.Origin == model.OriginAPI {
			if err := h.d.DeleteBridge(ctx, b.Spec.Name); err != nil {
				t.Fatalf("reset: delete bridge %q: %v", b.Spec.Name, err)
			}
		}
	}
}

// FuzzAPIRequest sends arbitrary request bodies to every RPC of the real API server backed by
// a real daemon on the embedded OVSDB, over Connect, gRPC and gRPC-Web with the JSON and the
// binary codec, as an admin or as a reader. It checks that nothing panics; that every answer
// is a well-formed response message or a status with a known code and a message (never
// Unknown, and never Internal: a malformed request is the caller's error); that a reader's
// write is PermissionDenied; that an accepted ApplyBridge/ApplyPort is within model/limits;
// that the answer and the allocations stay proportionate to the request; and that a refused
// request left OVSDB exactly as it was (a dump of every table before and after).
func FuzzAPIRequest(f *testing.F) {
	for _, s := range apiSeeds() {
		f.Add(s.method, s.mode, s.body)
	}
	h := newAPIHarness(f)
	f.Fuzz(func(t *testing.T, method, mode uint8, body []byte) {
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		protocol, isJSON, reader := fuzzMode(mode)
		srv := h.admin
		if reader {
			srv = h.reader
		}
		before := ovsdbtest.MustDump(t, h.db.Endpoint())
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		alloc := ms.TotalAlloc

		code, msg, respLen := h.call(t, srv, m, protocol, isJSON, body)

		runtime.ReadMemStats(&ms)
		// Loose bounds: they catch a request that makes the server allocate or answer
		// without bound, not ordinary costs (other goroutines allocate meanwhile too).
		if grew, limit := ms.TotalAlloc-alloc, uint64(256<<20+1024*len(body)); grew > limit {
			t.Errorf("%s: %d bytes allocated for a %d-byte request (limit %d)", m.name, grew, len(body), limit)
		}
		if limit := 1<<20 + 64*len(body); respLen > limit {
			t.Errorf("%s: %d-byte answer to a %d-byte request (limit %d)", m.name, respLen, len(body), limit)
		}
		switch code {
		case connect.CodeInternal, connect.Code(2) /* Unknown */, connect.CodeDataLoss:
			t.Fatalf("%s (protocol %d, json %v): code %v: %s", m.name, protocol, isJSON, code, msg)
		}
		// A reader's write is refused with PermissionDenied whatever its body: the role is
		// checked before the body is read, so one that does not decode gets no decoding error.
		if reader && apiserver.IsWrite("/ovsplane.v1.SwitchService/"+m.name) && code != connect.CodePermissionDenied {
			t.Fatalf("%s by a reader: code %v (%s), want permission_denied", m.name, code, msg)
		}
		if code == 0 {
			checkAcceptedLimits(t, m, isJSON, body)
		}
		if refused(code) {
			if after := ovsdbtest.MustDump(t, h.db.Endpoint()); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s refused with %v (%s) but OVSDB changed:\n%s", m.name, code, msg, before.Diff(after))
			}
		}
		h.reset(t)
	})
}

// refused reports whether code says the request was refused before anything was written.
func refused(code connect.Code) bool {
	switch code {
	case connect.CodeInvalidArgument, connect.CodeNotFound, connect.CodeAlreadyExists,
		connect.CodePermissionDenied, connect.CodeResourceExhausted, connect.CodeFailedPrecondition,
		connect.CodeOutOfRange, connect.CodeUnimplemented, connect.CodeUnauthenticated:
		return true
	}
	return false
}

// call sends body to method m and returns the status code (0 for OK), its message and the
// size of the answer. It fails t on an answer that is not well formed.
func (h *apiHarness) call(t *testing.T, srv *apiserver.Server, m fuzzMethod, protocol int, isJSON bool, body []byte) (code connect.Code, msg string, size int) {
	t.Helper()
	timeout := 20 * time.Second // a safety net against a hang, not a timing assertion
	if m.streaming {
		timeout = 20 * time.Millisecond // Watch runs until its client goes
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	codecName := "proto"
	if isJSON {
		codecName = "json"
	}
	path := "/ovsplane.v1.SwitchService/" + m.name
	var ctype string
	payload := body
	switch {
	case protocol == protoConnect && !m.streaming:
		ctype = "application/" + codecName
	case protocol == protoConnect:
		ctype, payload = "application/connect+"+codecName, envelope(0, body)
	case protocol == protoGRPC:
		ctype, payload = "application/grpc+"+codecName, envelope(0, body)
	default:
		ctype, payload = "application/grpc-web+"+codecName, envelope(0, body)
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(payload))
	req.Header.Set("Content-Type", ctype)
	if protocol == protoConnect {
		req.Header.Set("Connect-Protocol-Version", "1")
	}
	if protocol == protoGRPC {
		req.ProtoMajor, req.ProtoMinor, req.Proto = 2, 0, "HTTP/2.0"
		req.Header.Set("Te", "trailers")
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	res := rec.Result()
	out, _ := io.ReadAll(res.Body)
	size = len(out)
	unmarshal := func(b []byte) error {
		resp := m.resp()
		if isJSON {
			return protojson.Unmarshal(b, resp)
		}
		return proto.Unmarshal(b, resp)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s over %s: HTTP %d, %s: %s\nanswer %q", m.name, ctype, res.StatusCode, res.Header, fmt.Sprintf(format, args...), out)
	}
	switch {
	case protocol == protoConnect && !m.streaming:
		if res.StatusCode == http.StatusOK {
			if err := unmarshal(out); err != nil {
				fail("a response that is not a %s response: %v", m.name, err)
			}
			return 0, "", size
		}
		return connectError(out, fail)
	case protocol == protoConnect:
		frames := frames(out, fail)
		if len(frames) == 0 || frames[len(frames)-1].flags != 2 {
			fail("no end-of-stream message")
		}
		for _, fr := range frames[:len(frames)-1] {
			if fr.flags != 0 {
				fail("frame flags %#x", fr.flags)
			}
			if err := unmarshal(fr.data); err != nil {
				fail("a message that is not a %s response: %v", m.name, err)
			}
		}
		var end struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(frames[len(frames)-1].data, &end); err != nil {
			fail("end of stream: %v", err)
		}
		if end.Error == nil {
			return 0, "", size
		}
		return connectError(end.Error, fail)
	default:
		trailers := res.Trailer
		var data []frame
		for _, fr := range frames(out, fail) {
			switch {
			case fr.flags == 0:
				data = append(data, fr)
			case protocol == protoGRPCWeb && fr.flags == 0x80:
				tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(append(fr.data, "\r\n"...))))
				hdr, err := tp.ReadMIMEHeader()
				if err != nil && err != io.EOF {
					fail("gRPC-Web trailers: %v", err)
				}
				trailers = http.Header(hdr)
			default:
				fail("frame flags %#x", fr.flags)
			}
		}
		status := trailers.Get("Grpc-Status")
		if status == "" {
			status = res.Header.Get("Grpc-Status") // a trailers-only answer
		}
		n, err := strconv.Atoi(status)
		if err != nil || n < 0 || n > 16 {
			fail("grpc-status %q", status)
		}
		if n == 0 {
			for _, fr := range data {
				if err := unmarshal(fr.data); err != nil {
					fail("a message that is not a %s response: %v", m.name, err)
				}
			}
			return 0, "", size
		}
		msg := trailers.Get("Grpc-Message")
		if msg == "" {
			msg = res.Header.Get("Grpc-Message")
		}
		if msg == "" {
			fail("status %d without a message", n)
		}
		return connect.Code(n), msg, size
	}
}

// connectError parses a Connect error body: a known code and a message.
func connectError(b []byte, fail func(string, ...any)) (connect.Code, string, int) {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		fail("an error that is not Connect's JSON: %v", err)
	}
	var code connect.Code
	if err := code.UnmarshalText([]byte(e.Code)); err != nil {
		fail("unknown code %q", e.Code)
	}
	if strings.TrimSpace(e.Message) == "" {
		fail("code %v without a message", code)
	}
	return code, e.Message, len(b)
}

type frame struct {
	flags byte
	data  []byte
}

// envelope frames a message as Connect streaming, gRPC and gRPC-Web do.
func envelope(flags byte, msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

func frames(b []byte, fail func(string, ...any)) []frame {
	var out []frame
	for len(b) > 0 {
		if len(b) < 5 {
			fail("a truncated frame header")
		}
		n := binary.BigEndian.Uint32(b[1:5])
		if uint64(len(b)-5) < uint64(n) {
			fail("a truncated frame")
		}
		out = append(out, frame{b[0], b[5 : 5+n]})
		b = b[5+n:]
	}
	return out
}

type apiSeed struct {
	method, mode uint8
	body         []byte
}

func methodIndex(name string) uint8 {
	for i, m := range fuzzMethods {
		if m.name == name {
			return uint8(i)
		}
	}
	panic("no method " + name)
}

func ptrInt32(v int32) *int32 { return &v }

// apiSeeds are well-formed requests for every RPC in every protocol and codec; the malformed
// and hostile ones (huge counts, NUL, invalid UTF-8, deep nesting, "." and "..") are in
// testdata/fuzz/FuzzAPIRequest.
func apiSeeds() []apiSeed {
	port := func(name, typ string) *v1.Port {
		return &v1.Port{Name: name, Interfaces: []*v1.Interface{{Name: name, Type: typ}}}
	}
	reqs := map[string][]proto.Message{
		"ApplyBridge": {
			&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: "br-api", DatapathType: "netdev"}},
			&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: fuzzCfgBridge}},
			&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: fuzzForeignBridge}},
			&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: "br-x", FailMode: "secure", Protocols: []string{"OpenFlow13"},
				Controller: []string{"tcp:127.0.0.1:6653"}, OtherConfig: map[string]string{"hwaddr": "02:00:00:00:00:01"},
				ExternalIds: map[string]string{"ovsplane-owner": "me"}}},
		},
		"GetBridge":    {&v1.GetBridgeRequest{Name: fuzzCfgBridge}, &v1.GetBridgeRequest{Name: fuzzForeignBridge}},
		"ListBridges":  {&v1.ListBridgesRequest{}},
		"DeleteBridge": {&v1.DeleteBridgeRequest{Name: fuzzCfgBridge}, &v1.DeleteBridgeRequest{Name: fuzzForeignBridge}},
		"ApplyPort": {
			&v1.ApplyPortRequest{Bridge: fuzzCfgBridge, Port: port("p1", "internal")},
			&v1.ApplyPortRequest{Bridge: fuzzCfgBridge, Port: &v1.Port{Name: "vhu1", Tag: ptrInt32(10), Trunks: []int32{1, 2},
				Interfaces: []*v1.Interface{{Name: "vhu1", Type: "dpdkvhostuserclient", Options: map[string]string{"vhost-server-path": "/tmp/vhu1"},
					MtuRequest: ptrInt32(9000), OfportRequest: ptrInt32(7)}}}},
			&v1.ApplyPortRequest{Bridge: fuzzCfgBridge, Port: &v1.Port{Name: "bond0", BondMode: "balance-slb",
				Interfaces: []*v1.Interface{{Name: "e1", Type: "internal"}, {Name: "e2", Type: "internal"}}}},
			&v1.ApplyPortRequest{Bridge: fuzzCfgBridge, Port: port(fuzzCfgPort, "internal")},
			&v1.ApplyPortRequest{Bridge: fuzzForeignBridge, Port: port("p2", "internal")},
			&v1.ApplyPortRequest{Bridge: fuzzCfgBridge, Port: port(fuzzForeignPort, "internal")},
			&v1.ApplyPortRequest{Bridge: fuzzCfgBridge, Port: port("dpdk0", "dpdk")},
			&v1.ApplyPortRequest{Bridge: fuzzCfgBridge, Port: port("vdpa0", "vdpa")},
		},
		"GetPort":    {&v1.GetPortRequest{Name: fuzzCfgPort}},
		"ListPorts":  {&v1.ListPortsRequest{Bridge: fuzzCfgBridge}, &v1.ListPortsRequest{}},
		"DeletePort": {&v1.DeletePortRequest{Name: fuzzCfgPort}, &v1.DeletePortRequest{Name: fuzzForeignPort}},
		"ListStatus": {&v1.ListStatusRequest{}},
		"WaitReady": {
			&v1.WaitReadyRequest{Keys: []string{"port/" + fuzzCfgPort, "bridge/" + fuzzCfgBridge, "interface/" + fuzzCfgPort}},
			&v1.WaitReadyRequest{Keys: []string{"port/" + fuzzForeignPort}},
		},
		"Watch":       {&v1.WatchRequest{}},
		"Reload":      {&v1.ReloadRequest{}},
		"Health":      {&v1.HealthRequest{}},
		"ListPlugins": {&v1.ListPluginsRequest{}},
	}
	var seeds []apiSeed
	for _, m := range fuzzMethods {
		for _, msg := range reqs[m.name] {
			js, err := protojson.Marshal(msg)
			if err != nil {
				panic(err)
			}
			bin, err := proto.Marshal(msg)
			if err != nil {
				panic(err)
			}
			for mode := range uint8(6) {
				if _, isJSON, _ := fuzzMode(mode); isJSON {
					seeds = append(seeds, apiSeed{methodIndex(m.name), mode, js})
				} else {
					seeds = append(seeds, apiSeed{methodIndex(m.name), mode, bin})
				}
			}
		}
	}
	return seeds
}

// checkAcceptedLimits checks that an accepted ApplyBridge or ApplyPort request is within
// model/limits: names (limits.CheckName, CheckInterfaceName), maps (CheckMap) and the number
// of interfaces (CheckInterfaces) — whatever the server checked, nothing it wrote may be out
// of bounds.
func checkAcceptedLimits(t *testing.T, m fuzzMethod, isJSON bool, body []byte) {
	t.Helper()
	if m.name != "ApplyBridge" && m.name != "ApplyPort" {
		return
	}
	req := m.req()
	var err error
	if isJSON {
		if len(body) > 0 { // Connect reads an empty body as the empty message and drops unknown fields
			err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, req)
		}
	} else {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		t.Fatalf("%s accepted a request that does not decode: %v", m.name, err)
	}
	var errs []error
	maps := func(object string, cols map[string]map[string]string) {
		for col, mp := range cols {
			errs = append(errs, limits.CheckMap(object, col, mp))
		}
	}
	switch r := req.(type) {
	case *v1.ApplyBridgeRequest:
		b := r.GetBridge()
		errs = append(errs, limits.CheckName(limits.Bridge, b.GetName()))
		maps("bridge", map[string]map[string]string{"other_config": b.GetOtherConfig(), "external_ids": b.GetExternalIds()})
	case *v1.ApplyPortRequest:
		p := r.GetPort()
		errs = append(errs, limits.CheckName(limits.Port, p.GetName()), limits.CheckInterfaces("port", len(p.GetInterfaces())))
		maps("port", map[string]map[string]string{"other_config": p.GetOtherConfig(), "external_ids": p.GetExternalIds()})
		for _, in := range p.GetInterfaces() {
			errs = append(errs, limits.CheckInterfaceName(in.GetName(), in.GetType()))
			maps("interface", map[string]map[string]string{"options": in.GetOptions(),
				"other_config": in.GetOtherConfig(), "external_ids": in.GetExternalIds()})
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%s accepted a request out of model/limits:\n%v", m.name, err)
	}
}
