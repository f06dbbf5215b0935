package apiserver_test

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// An admin's write that Connect ends before the interceptor runs — a body that does not
// decode, over Connect, gRPC and gRPC-Web — is answered InvalidArgument and audit-logged
// exactly once, with that result and no object names; a write that decodes (whether its
// handler succeeds or refuses it) is audit-logged exactly once too, by the interceptor, with
// its object names. Each call's line exists by the time its answer has been read in full.
func TestAuditUndecodableAdminWrite(t *testing.T) {
	c := newCerts(t)
	var audit auditBuffer
	d := startDaemonWith(t, config.API{Listen: []string{"tcp:127.0.0.1:0"},
		TLS:  model.TLS{Certificate: c.serverCert, PrivateKey: c.serverKey, CACert: c.ca},
		Auth: config.Auth{Admins: config.Principals{Subjects: []string{"ops-*"}}}},
		apiserver.Options{Audit: auditLogger(&audit)})
	base := "https://" + strings.TrimPrefix(d.addrs[0], "tcp:")
	admin := tlsClient(t, c.ca, c.issueClient("ops-alice", &x509.Certificate{Subject: pkix.Name{CommonName: "ops-alice"}}))

	// call sends one request and returns the answer's status and the audit lines it added.
	seen := 0
	call := func(req *http.Request) (connect.Code, []map[string]any) {
		t.Helper()
		res, err := admin.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", req.URL.Path, err)
		}
		code, _ := statusOf(t, res)
		lines := audit.lines(t)
		added := lines[seen:]
		seen = len(lines)
		return code, added
	}
	const procedure = "/ovsplane.v1.SwitchService/ApplyBridge"
	checkLine := func(what string, lines []map[string]any, want map[string]any, absent ...string) {
		t.Helper()
		if len(lines) != 1 {
			t.Errorf("%s: %d audit lines, want exactly one: %v", what, len(lines), lines)
			return
		}
		l := lines[0]
		want["procedure"], want["subject"], want["role"], want["msg"] = procedure, "CN=ops-alice", "admin", "api audit"
		for k, v := range want {
			if l[k] != v {
				t.Errorf("%s: audit line's %s = %v, want %v: %v", what, k, l[k], v, l)
			}
		}
		for _, k := range absent {
			if _, ok := l[k]; ok {
				t.Errorf("%s: audit line has %s: %v", what, k, l)
			}
		}
		if _, ok := l["duration"]; !ok {
			t.Errorf("%s: audit line has no duration: %v", what, l)
		}
	}

	for _, wc := range undecodableWrites() {
		code, lines := call(wc.request(t, base, bytes.NewReader(wc.body)))
		if code != connect.CodeInvalidArgument {
			t.Errorf("undecodable ApplyBridge over %s: %v, want invalid_argument", wc.name, code)
		}
		checkLine("undecodable ApplyBridge over "+wc.name, lines, map[string]any{"result": "invalid_argument"}, "bridge", "port")
	}

	// The same protocols with bodies that decode: one that the handler applies, one it refuses
	// (no name) — the interceptor's line, which names the bridge, and no second one.
	decodable := []struct {
		name, ctype, bridge string
		frame               bool
	}{
		{"connect-json", "application/json", "br-connect", false},
		{"grpc-json", "application/grpc+json", "br-grpc", true},
		{"grpc-web-json", "application/grpc-web+json", "br-grpc-web", true},
	}
	for _, p := range decodable {
		for _, tc := range []struct {
			bridge string
			want   connect.Code
			result string
		}{
			{p.bridge, 0, "ok"},
			{"", connect.CodeInvalidArgument, "invalid_argument"},
		} {
			body := []byte(`{"bridge":{"name":"` + tc.bridge + `"}}`)
			if p.frame {
				body = envelope(0, body)
			}
			code, lines := call(wireCall{p.name, p.ctype, nil}.request(t, base, bytes.NewReader(body)))
			what := "ApplyBridge of " + tc.bridge + " over " + p.name
			if tc.bridge == "" {
				what = "ApplyBridge of a bridge with no name over " + p.name
			}
			if code != tc.want {
				t.Errorf("%s: %v, want %s", what, code, tc.result)
			}
			checkLine(what, lines, map[string]any{"result": tc.result, "bridge": tc.bridge})
		}
	}
	if b := d.fake.Bridges(); len(b) != len(decodable) {
		t.Errorf("%d bridges applied, want the %d named ones: %+v", len(b), len(decodable), b)
	}
}

// Other writes Connect ends before the interceptor runs are audit-logged exactly once too,
// with the status a client derives from the answer: a body over Options.MaxRequestBytes
// (resource_exhausted, over Connect and gRPC-Web), an unsupported content type (HTTP 415:
// unknown), an unknown procedure — a write, since it is no known read (HTTP 404:
// unimplemented). In process, with Options.Unidentified an admin.
func TestAuditWriteEndedBeforeInterceptor(t *testing.T) {
	var audit auditBuffer
	srv := apiserver.New(apitest.New(), apiserver.Options{Unidentified: apiserver.RoleAdmin, MaxRequestBytes: 64,
		Audit: auditLogger(&audit)})
	big := []byte(`{"bridge":{"name":"br0","external_ids":{"k":"` + strings.Repeat("x", 100) + `"}}}`)
	for _, tc := range []struct {
		name, path, ctype string
		body              []byte
		result            string
	}{
		{"too large over Connect", "/ovsplane.v1.SwitchService/ApplyBridge", "application/json", big, "resource_exhausted"},
		{"too large over gRPC-Web", "/ovsplane.v1.SwitchService/ApplyBridge", "application/grpc-web+json", envelope(0, big), "resource_exhausted"},
		{"unsupported content type", "/ovsplane.v1.SwitchService/ApplyBridge", "text/plain", []byte("{}"), "unknown"},
		{"unknown procedure", "/ovsplane.v1.SwitchService/Nope", "application/json", []byte("{}"), "unimplemented"},
	} {
		before := len(audit.lines(t))
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://x"+tc.path, bytes.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ctype)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		lines := audit.lines(t)[before:]
		if len(lines) != 1 {
			t.Errorf("%s (HTTP %d): %d audit lines, want exactly one: %v", tc.name, rec.Code, len(lines), lines)
			continue
		}
		if l := lines[0]; l["procedure"] != tc.path || l["result"] != tc.result || l["role"] != "admin" || l["transport"] != "in-process" {
			t.Errorf("%s (HTTP %d, %q): audit line %v, want procedure %s, result %s, role admin", tc.name, rec.Code, rec.Body, l, tc.path, tc.result)
		}
	}
}
