package apiserver_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
)

// wireCall is an ApplyBridge whose body does not decode, in one protocol and codec: JSON `0`
// or the protobuf byte 0xff (a truncated tag).
type wireCall struct {
	name, ctype string
	body        []byte
}

func undecodableWrites() []wireCall {
	return []wireCall{
		{"connect-json", "application/json", []byte("0")},
		{"connect-proto", "application/proto", []byte{0xff}},
		{"grpc-json", "application/grpc+json", envelope(0, []byte("0"))},
		{"grpc-proto", "application/grpc", envelope(0, []byte{0xff})},
		{"grpc-web-json", "application/grpc-web+json", envelope(0, []byte("0"))},
		{"grpc-web-proto", "application/grpc-web+proto", envelope(0, []byte{0xff})},
	}
}

// request builds c as a POST to ApplyBridge at base with body.
func (c wireCall) request(t *testing.T, base string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/ovsplane.v1.SwitchService/ApplyBridge", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", c.ctype)
	if strings.HasPrefix(c.name, "connect") {
		req.Header.Set("Connect-Protocol-Version", "1")
	}
	if strings.HasPrefix(c.name, "grpc-") && !strings.HasPrefix(c.name, "grpc-web") {
		req.Header.Set("Te", "trailers")
	}
	return req
}

// statusOf returns the status code and message of an answer in any of the protocols: a
// Connect JSON error, gRPC trailers (or headers, trailers-only), gRPC-Web trailers in a frame
// or in the headers. OK is 0.
func statusOf(t *testing.T, res *http.Response) (connect.Code, string) {
	t.Helper()
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/grpc") {
		if res.StatusCode == http.StatusOK {
			return 0, ""
		}
		var e struct{ Code, Message string }
		var code connect.Code
		if err := json.Unmarshal(body, &e); err != nil || code.UnmarshalText([]byte(e.Code)) != nil {
			t.Fatalf("HTTP %d with no Connect error: %q", res.StatusCode, body)
		}
		return code, e.Message
	}
	trailers := res.Trailer
	for _, fr := range frames(body, func(f string, a ...any) { t.Fatalf(f, a...) }) {
		if fr.flags == 0x80 { // gRPC-Web trailers
			hdr, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(append(fr.data, "\r\n"...)))).ReadMIMEHeader()
			if err != nil && err != io.EOF {
				t.Fatalf("gRPC-Web trailers: %v", err)
			}
			trailers = http.Header(hdr)
		}
	}
	get := func(k string) string {
		if v := trailers.Get(k); v != "" {
			return v
		}
		return res.Header.Get(k) // a trailers-only answer
	}
	n, err := strconv.Atoi(get("Grpc-Status"))
	if err != nil {
		t.Fatalf("no grpc-status in %v / %v", res.Header, trailers)
	}
	return connect.Code(n), get("Grpc-Message")
}

// A reader and a caller with no role sending a write whose body does not decode get
// PermissionDenied — not the decoder's InvalidArgument — over Connect, gRPC and gRPC-Web (here
// over TLS with HTTP/2, identified by their certificates), each refusal audit-logged exactly
// once; an admin sending the same bodies gets the decoding error, so the bodies really do not
// decode.
func TestUndecodableWriteRefusedByRole(t *testing.T) {
	c := newCerts(t)
	var audit auditBuffer
	d := startDaemonWith(t, tlsAuthAPI(c, "prom"), apiserver.Options{Audit: auditLogger(&audit)})
	base := "https://" + strings.TrimPrefix(d.addrs[0], "tcp:")
	clients := map[string]*http.Client{}
	for _, name := range []string{"ops-alice", "prom", "mallory"} {
		clients[name] = tlsClient(t, c.ca, c.issueClient(name, &x509.Certificate{Subject: pkix.Name{CommonName: name}}))
	}
	calls := undecodableWrites()
	for _, who := range []struct{ cn, role string }{{"prom", "reader"}, {"mallory", "none"}} {
		for _, call := range calls {
			res, err := clients[who.cn].Do(call.request(t, base, bytes.NewReader(call.body)))
			if err != nil {
				t.Fatalf("%s %s: %v", who.cn, call.name, err)
			}
			code, msg := statusOf(t, res)
			if code != connect.CodePermissionDenied || !strings.Contains(msg, "api.auth.admins.subjects") {
				t.Errorf("%s (role %s) ApplyBridge over %s: %v %q, want permission_denied naming api.auth.admins.subjects",
					who.cn, who.role, call.name, code, msg)
			}
		}
		n := 0
		for _, l := range audit.lines(t) {
			if l["subject"] == "CN="+who.cn {
				n++
				if l["procedure"] != "/ovsplane.v1.SwitchService/ApplyBridge" || l["result"] != "permission_denied" || l["role"] != who.role {
					t.Errorf("audit line of %s: %v", who.cn, l)
				}
			}
		}
		if n != len(calls) {
			t.Errorf("%d audit lines for %s's %d refused calls, want one each:\n%s", n, who.cn, len(calls), audit.String())
		}
	}
	for _, call := range calls {
		res, err := clients["ops-alice"].Do(call.request(t, base, bytes.NewReader(call.body)))
		if err != nil {
			t.Fatalf("admin %s: %v", call.name, err)
		}
		if code, msg := statusOf(t, res); code != connect.CodeInvalidArgument {
			t.Errorf("admin ApplyBridge over %s with an undecodable body: %v %q, want invalid_argument", call.name, code, msg)
		}
	}
	if b := d.fake.Bridges(); len(b) != 0 {
		t.Errorf("bridges applied: %+v", b)
	}
}

// tlsClient is an HTTP/2 client presenting the certificate of tc, trusting the CA at ca.
func tlsClient(t *testing.T, ca string, tc model.TLS) *http.Client {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(tc.Certificate, tc.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// countingBody records whether anything read it.
type countingBody struct {
	r    io.Reader
	read atomic.Bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.r.Read(p)
}

// A refused call's body is never read: the role is checked on the path before Connect
// decodes anything (a caller without the role cannot make the server read 4 MiB). In process
// (ServeHTTP), the caller's role is Options.Unidentified.
func TestRefusedCallBodyNeverRead(t *testing.T) {
	for _, role := range []apiserver.Role{apiserver.RoleReader, apiserver.RoleNone} {
		var audit auditBuffer
		srv := apiserver.New(apitest.New(), apiserver.Options{Unidentified: role, Audit: auditLogger(&audit)})
		calls := undecodableWrites()
		for _, call := range calls {
			body := &countingBody{r: bytes.NewReader(call.body)}
			req := call.request(t, "http://x", body)
			if strings.HasPrefix(call.name, "grpc-") && !strings.HasPrefix(call.name, "grpc-web") {
				req.ProtoMajor, req.ProtoMinor, req.Proto = 2, 0, "HTTP/2.0"
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if code, msg := statusOf(t, rec.Result()); code != connect.CodePermissionDenied || !strings.Contains(msg, "role "+role.String()) {
				t.Errorf("role %s, ApplyBridge over %s: %v %q, want permission_denied naming the role", role, call.name, code, msg)
			}
			if body.read.Load() {
				t.Errorf("role %s, ApplyBridge over %s: the refused request's body was read", role, call.name)
			}
		}
		if lines := audit.lines(t); len(lines) != len(calls) {
			t.Errorf("role %s: %d audit lines for %d refused calls, want one each:\n%s", role, len(lines), len(calls), audit.String())
		}
	}
}
