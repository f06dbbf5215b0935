package apiserver_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// auditBuffer collects the audit log (JSON lines) written from the server's goroutines.
type auditBuffer struct{ testkit.LogBuffer }

// lines returns the JSON log lines written so far and fails the test on a line that is not
// JSON.
func (b *auditBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	recs, err := b.Records()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	return recs
}

func auditLogger(b *auditBuffer) *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// tlsAuthAPI is a TCP listener with TLS and client certificates from c, admins ops-* and the
// given readers.
func tlsAuthAPI(c certs, readers ...string) config.API {
	return config.API{Listen: []string{"tcp:127.0.0.1:0"},
		TLS: model.TLS{Certificate: c.serverCert, PrivateKey: c.serverKey, CACert: c.ca},
		Auth: config.Auth{
			Admins:  config.Principals{Subjects: []string{"ops-*"}},
			Readers: config.Principals{Subjects: readers},
		}}
}

// The methods that change something. A method added to the service must be added to this
// table or to reads, so that its classification is a decision, not an accident.
var (
	writes = []string{"ApplyBridge", "DeleteBridge", "ApplyPort", "DeletePort", "Reload"}
	reads  = []string{"GetBridge", "ListBridges", "GetPort", "ListPorts", "ListStatus", "WaitReady", "Watch", "Health", "ListPlugins", "PluginStats"}
)

func TestEveryProcedureIsClassified(t *testing.T) {
	methods := v1.File_ovsplane_v1_switch_proto.Services().ByName("SwitchService").Methods()
	for i := range methods.Len() {
		name := string(methods.Get(i).Name())
		proc := "/ovsplane.v1.SwitchService/" + name
		switch {
		case slices.Contains(writes, name):
			if !apiserver.IsWrite(proc) {
				t.Errorf("%s changes state but is not classified as a write: readers could call it", name)
			}
		case slices.Contains(reads, name):
			if apiserver.IsWrite(proc) {
				t.Errorf("%s is a read but classified as a write", name)
			}
		default:
			t.Errorf("%s is in neither the writes nor the reads of this test: decide which it is", name)
		}
	}
	if !apiserver.IsWrite("/ovsplane.v1.SwitchService/SomethingNew") {
		t.Error("an unknown procedure is not a write: role checks must fail closed")
	}
}

// certs is a CA and client certificates with chosen names, for role tests over TLS.
type certs struct {
	ca, serverCert, serverKey string
	dir                       string
	issueClient               func(name string, tmpl *x509.Certificate) model.TLS
}

func newCerts(t *testing.T) certs {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := newCA(t, "ovsplane test CA")
	c := certs{dir: dir, ca: writePEM(t, dir, "ca.pem", "CERTIFICATE", ca.Raw),
		serverCert: filepath.Join(dir, "server.pem"), serverKey: filepath.Join(dir, "server-key.pem")}
	issue(t, ca, caKey, &x509.Certificate{
		Subject: pkix.Name{CommonName: "ovsplaned"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, c.serverCert, c.serverKey)
	c.issueClient = func(name string, tmpl *x509.Certificate) model.TLS {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		cert, key := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		issue(t, ca, caKey, tmpl, cert, key)
		return model.TLS{CACert: c.ca, Certificate: cert, PrivateKey: key}
	}
	return c
}

// A tcp: listener with a certificate but no client CA let anyone write (a bridge created by
// `curl -k`): Serve refuses to start it, naming the key.
func TestTCPListenerRequiresClientCA(t *testing.T) {
	c := newCerts(t)
	srv := apiserver.New(apitest.New(), apiserver.Options{})
	err := srv.Serve(t.Context(), config.API{Listen: []string{"tcp:127.0.0.1:0"},
		TLS: model.TLS{Certificate: c.serverCert, PrivateKey: c.serverKey}})
	if err == nil || !strings.Contains(err.Error(), "api.listen[0]") || !strings.Contains(err.Error(), "api.tls.ca_cert") {
		t.Fatalf("Serve on tcp: without a client CA = %v, want an error naming api.listen[0] and api.tls.ca_cert", err)
	}
}

// A client without a certificate does not get past the TLS handshake: no HTTP request of
// it is ever read (curl -k, the original report).
func TestTCPClientWithoutCertificateRefused(t *testing.T) {
	c := newCerts(t)
	d := startDaemon(t, config.API{Listen: []string{"tcp:127.0.0.1:0"},
		TLS: model.TLS{Certificate: c.serverCert, PrivateKey: c.serverKey, CACert: c.ca}})
	addr := strings.TrimPrefix(d.addrs[0], "tcp:")
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err == nil {
		defer conn.Close()
		// TLS 1.3: the server's verdict on the (missing) client certificate arrives after
		// the client's side of the handshake; the request must fail, not be answered.
		body := `{"bridge":{"name":"anon"}}`
		req := "POST /ovsplane.v1.SwitchService/ApplyBridge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body
		_, _ = io.WriteString(conn, req)
		resp, rerr := io.ReadAll(conn)
		if rerr == nil && len(resp) > 0 {
			t.Errorf("a client without a certificate got an answer: %q", resp)
		}
		if rerr != nil && !strings.Contains(rerr.Error(), "certificate") {
			t.Errorf("refusal %v does not say a certificate is required", rerr)
		}
	}
	if _, err := d.fake.Bridge("anon"); err == nil {
		t.Error("the anonymous client's ApplyBridge was served")
	}
}

// TCP callers get the role their certificate's names map to: admins write, readers only read,
// anyone else is refused with a message naming the certificate and the key to change. Every
// write and every refusal is audit-logged with the certificate's subject.
func TestRolesOverTLS(t *testing.T) {
	c := newCerts(t)
	var audit auditBuffer
	d := startDaemonWith(t, tlsAuthAPI(c, "spiffe://example.org/monitoring/*"), apiserver.Options{Audit: auditLogger(&audit)})
	seed(t, d)
	spiffe, _ := url.Parse("spiffe://example.org/monitoring/prom")
	admin := dial(t, d.addrs[0], client.WithTLS(c.issueClient("admin", &x509.Certificate{Subject: pkix.Name{CommonName: "ops-alice"}})))
	reader := dial(t, d.addrs[0], client.WithTLS(c.issueClient("reader", &x509.Certificate{Subject: pkix.Name{CommonName: "prom"}, URIs: []*url.URL{spiffe}})))
	stranger := dial(t, d.addrs[0], client.WithTLS(c.issueClient("stranger", &x509.Certificate{Subject: pkix.Name{CommonName: "mallory", Organization: []string{"elsewhere"}}})))
	ctx := t.Context()

	callReads(t, "reader", reader, nil)
	callWrites(t, "reader", reader, d, connect.CodePermissionDenied, "api.auth.admins.subjects")
	callReads(t, "stranger", stranger, []string{"certificate CN=mallory,O=elsewhere", "api.auth.readers.subjects"})
	callWrites(t, "stranger", stranger, d, connect.CodePermissionDenied, "api.auth.admins.subjects")
	if _, err := admin.ApplyBridge(ctx, connect.NewRequest(&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: "br-ops"}})); err != nil {
		t.Errorf("admin ApplyBridge: %v", err)
	}
	if _, err := admin.DeletePort(ctx, connect.NewRequest(&v1.DeletePortRequest{Name: "nope"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("admin DeletePort of a missing port: %v, want NotFound", err)
	}

	lines := audit.lines(t)
	find := func(subject, procedure, result string) bool {
		return slices.ContainsFunc(lines, func(m map[string]any) bool {
			return m["subject"] == subject && m["procedure"] == "/ovsplane.v1.SwitchService/"+procedure && m["result"] == result && m["transport"] == "tcp"
		})
	}
	for _, want := range []struct{ subject, procedure, result string }{
		{"CN=ops-alice", "ApplyBridge", "ok"},
		{"CN=ops-alice", "DeletePort", "not_found"},
		{"CN=prom", "ApplyPort", "permission_denied"},
		{"CN=mallory,O=elsewhere", "ListStatus", "permission_denied"},
		{"CN=mallory,O=elsewhere", "Reload", "permission_denied"},
	} {
		if !find(want.subject, want.procedure, want.result) {
			t.Errorf("no audit line for %s %s → %s in:\n%s", want.subject, want.procedure, want.result, audit.String())
		}
	}
	if slices.ContainsFunc(lines, func(m map[string]any) bool { return m["subject"] == "CN=prom" && m["result"] == "ok" }) {
		t.Errorf("a reader's successful read was audit-logged (only changes and refusals are):\n%s", audit.String())
	}
}

// callReads makes every read call through c: each must succeed, or, when wantDenied lists
// strings, fail with PermissionDenied whose message holds them.
func callReads(t *testing.T, who string, c *client.Client, wantDenied []string) {
	t.Helper()
	ctx := t.Context()
	check := func(method string, err error) {
		t.Helper()
		if wantDenied == nil {
			if err != nil {
				t.Errorf("%s %s: %v", who, method, err)
			}
			return
		}
		if connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("%s %s: %v, want PermissionDenied", who, method, err)
			return
		}
		for _, w := range wantDenied {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %s: %q does not name %q", who, method, err, w)
			}
		}
	}
	_, err := c.GetBridge(ctx, connect.NewRequest(&v1.GetBridgeRequest{Name: "br0"}))
	check("GetBridge", err)
	_, err = c.ListBridges(ctx, connect.NewRequest(&v1.ListBridgesRequest{}))
	check("ListBridges", err)
	_, err = c.GetPort(ctx, connect.NewRequest(&v1.GetPortRequest{Name: "p1"}))
	check("GetPort", err)
	_, err = c.ListPorts(ctx, connect.NewRequest(&v1.ListPortsRequest{}))
	check("ListPorts", err)
	_, err = c.ListStatus(ctx, connect.NewRequest(&v1.ListStatusRequest{}))
	check("ListStatus", err)
	_, err = c.WaitReady(ctx, connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/p1"}}))
	check("WaitReady", err)
	_, err = c.Health(ctx, connect.NewRequest(&v1.HealthRequest{}))
	check("Health", err)
	_, err = c.ListPlugins(ctx, connect.NewRequest(&v1.ListPluginsRequest{}))
	check("ListPlugins", err)
	stream, err := c.Watch(ctx, connect.NewRequest(&v1.WatchRequest{}))
	if err == nil {
		if stream.Receive() {
			err = nil
		} else {
			err = stream.Err()
			if err == nil {
				err = errors.New("the stream ended without a snapshot")
			}
		}
		stream.Close()
	}
	check("Watch", err)
}

// callWrites makes every write call through c: each must fail with code and a message naming
// key, and change nothing.
func callWrites(t *testing.T, who string, c *client.Client, d *daemon, code connect.Code, key string) {
	t.Helper()
	ctx := t.Context()
	reloaded := false
	d.fake.SetReload(func() error { reloaded = true; return nil })
	for method, call := range map[string]func() error{
		"ApplyBridge": func() error {
			_, err := c.ApplyBridge(ctx, connect.NewRequest(&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: "br-" + who}}))
			return err
		},
		"DeleteBridge": func() error {
			_, err := c.DeleteBridge(ctx, connect.NewRequest(&v1.DeleteBridgeRequest{Name: "br0"}))
			return err
		},
		"ApplyPort": func() error {
			_, err := c.ApplyPort(ctx, connect.NewRequest(&v1.ApplyPortRequest{Bridge: "br0", Port: &v1.Port{Name: "p-" + who, Interfaces: []*v1.Interface{{Name: "p-" + who}}}}))
			return err
		},
		"DeletePort": func() error {
			_, err := c.DeletePort(ctx, connect.NewRequest(&v1.DeletePortRequest{Name: "p1"}))
			return err
		},
		"Reload": func() error {
			_, err := c.Reload(ctx, connect.NewRequest(&v1.ReloadRequest{}))
			return err
		},
	} {
		err := call()
		if connect.CodeOf(err) != code || !strings.Contains(err.Error(), key) {
			t.Errorf("%s %s: %v, want %v naming %s", who, method, err, code, key)
		}
	}
	if _, err := d.fake.Bridge("br-" + who); err == nil {
		t.Errorf("%s's ApplyBridge was served", who)
	}
	if _, err := d.fake.Port("p-" + who); err == nil {
		t.Errorf("%s's ApplyPort was served", who)
	}
	if _, err := d.fake.Bridge("br0"); err != nil {
		t.Errorf("%s's DeleteBridge was served: %v", who, err)
	}
	if _, err := d.fake.Port("p1"); err != nil {
		t.Errorf("%s's DeletePort was served: %v", who, err)
	}
	if reloaded {
		t.Errorf("%s's Reload was served", who)
	}
}

// Calls through ServeHTTP carry no peer identity: refused unless Options.Unidentified gives
// them a role.
func TestUnidentifiedCallers(t *testing.T) {
	for _, tc := range []struct {
		role apiserver.Role
		want int
	}{{apiserver.RoleNone, http.StatusForbidden}, {apiserver.RoleReader, http.StatusForbidden}, {apiserver.RoleAdmin, http.StatusOK}} {
		fake := apitest.New()
		srv := apiserver.New(fake, apiserver.Options{Unidentified: tc.role})
		rec := &recorder{header: http.Header{}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://x/ovsplane.v1.SwitchService/ApplyBridge", strings.NewReader(`{"bridge":{"name":"br0"}}`))
		req.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(rec, req)
		if rec.code != tc.want {
			t.Errorf("ApplyBridge in process with Unidentified %v: HTTP %d %s, want %d", tc.role, rec.code, rec.body.String(), tc.want)
		}
		if _, err := fake.Bridge("br0"); (err == nil) != (tc.want == http.StatusOK) {
			t.Errorf("Unidentified %v: bridge applied = %v", tc.role, err == nil)
		}
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

// The audit log names the unix caller, the objects and the result of every change, and never
// the request's contents.
func TestAuditLogOverUnixSocket(t *testing.T) {
	var audit auditBuffer
	d := startDaemonWith(t, config.API{Listen: []string{"unix:SOCK"}}, apiserver.Options{Audit: auditLogger(&audit)})
	seed(t, d)
	c := dial(t, d.addrs[0])
	ctx := t.Context()
	if _, err := c.ApplyPort(ctx, connect.NewRequest(&v1.ApplyPortRequest{Bridge: "br0", Port: &v1.Port{Name: "vx1",
		Interfaces: []*v1.Interface{{Name: "vx1", Type: "vxlan", Options: map[string]string{"remote_ip": "192.0.2.1", "psk": "s3cr3t-psk"}}}}})); err != nil {
		t.Fatalf("ApplyPort: %v", err)
	}
	if _, err := c.DeleteBridge(ctx, connect.NewRequest(&v1.DeleteBridgeRequest{Name: "br-missing"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("DeleteBridge of a missing bridge: %v", err)
	}
	if _, err := c.ListStatus(ctx, connect.NewRequest(&v1.ListStatusRequest{})); err != nil {
		t.Fatalf("ListStatus: %v", err)
	}
	lines := audit.lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d audit lines, want 2 (the two writes, not the read):\n%s", len(lines), audit.String())
	}
	pid := float64(os.Getpid())
	uid := float64(os.Geteuid())
	for i, want := range []map[string]any{
		{"procedure": "/ovsplane.v1.SwitchService/ApplyPort", "bridge": "br0", "port": "vx1", "result": "ok"},
		{"procedure": "/ovsplane.v1.SwitchService/DeleteBridge", "bridge": "br-missing", "result": "not_found"},
	} {
		m := lines[i]
		want["msg"], want["transport"], want["uid"], want["pid"], want["role"] = "api audit", "unix", uid, pid, "admin"
		for k, v := range want {
			if m[k] != v {
				t.Errorf("audit line %d: %s = %v, want %v\n%v", i, k, m[k], v, m)
			}
		}
		if _, ok := m["duration"]; !ok {
			t.Errorf("audit line %d has no duration: %v", i, m)
		}
	}
	if strings.Contains(audit.String(), "s3cr3t") || strings.Contains(audit.String(), "192.0.2.1") {
		t.Errorf("the audit log holds request contents:\n%s", audit.String())
	}
}

// A client that sends its body one byte at a time held a connection for more than 90 s: the
// body must arrive within Options.BodyTimeout, or the server closes the connection.
func TestSlowBodyIsCut(t *testing.T) {
	d := startDaemonWith(t, config.API{Listen: []string{"unix:SOCK"}}, apiserver.Options{BodyTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /ovsplane.v1.SwitchService/ListStatus HTTP/1.1\r\nHost: x\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// The guard only keeps a broken server from hanging the test; the assertion is that the
	// server ends the connection (EOF), long before the guard.
	if err := conn.SetReadDeadline(time.Now().Add(60 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the server kept the connection of a body that stopped after 1 byte: %v (read %q)", err, resp)
	}
	if bytes.Contains(resp, []byte(`"statuses"`)) {
		t.Errorf("the truncated request was answered as if complete: %q", resp)
	}
}

// The body deadline ends with the body: a Watch stream and a WaitReady wait outlive it.
func TestStreamsOutliveBodyTimeout(t *testing.T) {
	const bodyTimeout = 100 * time.Millisecond
	d := startDaemonWith(t, config.API{Listen: []string{"unix:SOCK"}}, apiserver.Options{BodyTimeout: bodyTimeout})
	seed(t, d)
	for _, proto := range []string{"grpc", "connect"} {
		t.Run(proto, func(t *testing.T) {
			var opts []client.Option
			if proto == "connect" {
				opts = append(opts, client.WithConnectProtocol())
			}
			c := dial(t, d.addrs[0], opts...)
			stream, err := c.Watch(t.Context(), connect.NewRequest(&v1.WatchRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			if !stream.Receive() || !stream.Msg().Snapshot {
				t.Fatalf("no snapshot: %v", stream.Err())
			}
			d.fake.SetPending("port/p1", true)
			waited := make(chan error, 2)
			go func() {
				_, err := c.WaitReady(t.Context(), connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/p1"}}))
				waited <- err
			}()
			go func() { // the same over HTTP/1.1 with JSON, as curl calls it
				resp, err := httpUnix(d.sock).Post("http://localhost/ovsplane.v1.SwitchService/WaitReady", "application/json",
					strings.NewReader(`{"keys":["port/p1"]}`))
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("HTTP/1.1: %d %s", resp.StatusCode, body)
					}
				}
				waited <- err
			}()
			time.Sleep(5 * bodyTimeout) // well past the body deadline: both calls must still be open
			name := "br-" + proto
			if _, err := d.fake.ApplyBridge(t.Context(), model.Bridge{Name: name}); err != nil {
				t.Fatal(err)
			}
			d.fake.SetPending("port/p1", false)
			for stream.Receive() {
				if slices.ContainsFunc(stream.Msg().Statuses, func(s *v1.Status) bool { return s.Name == name }) {
					break
				}
			}
			if err := stream.Err(); err != nil {
				t.Errorf("Watch ended after the body timeout: %v", err)
			}
			for range 2 {
				if err := <-waited; err != nil {
					t.Errorf("WaitReady ended after the body timeout: %v", err)
				}
			}
		})
	}
}
