package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// daemon is a running API server over a fake backend.
type daemon struct {
	fake  *apitest.Fake
	addrs []string // as reported by OnListen, in listen order
	sock  string   // the unix socket path, if any
	stop  func() error
}

// startDaemon serves cfg (unix:PATH entries may use the placeholder SOCK for a fresh path)
// and returns once every address listens. stop ends Serve and returns its error.
func startDaemon(t *testing.T, cfg config.API) *daemon {
	t.Helper()
	return startDaemonWith(t, cfg, apiserver.Options{})
}

// startSeeded starts a daemon on a unix socket, seeds it (seed) and dials it.
func startSeeded(t *testing.T) (*daemon, *client.Client) {
	t.Helper()
	d := startDaemon(t, config.API{Listen: []string{"unix:SOCK"}})
	seed(t, d)
	return d, dial(t, d.addrs[0])
}

// startDaemonWith is startDaemon with opts (its Logger defaults to the test's output; its
// OnListen is replaced).
func startDaemonWith(t *testing.T, cfg config.API, opts apiserver.Options) *daemon {
	t.Helper()
	d := &daemon{fake: apitest.New()}
	// A short directory: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "ovsplane-api")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for i, a := range cfg.Listen {
		if a == "unix:SOCK" {
			d.sock = filepath.Join(dir, "run", "ovsplaned.sock")
			cfg.Listen[i] = "unix:" + d.sock
		}
	}
	listening := make(chan string, len(cfg.Listen))
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testkit.Output(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts.OnListen = func(addr string) { listening <- addr }
	srv := apiserver.New(d.fake, opts)
	// Not t.Context(): that ends before the cleanups run, and Serve logs until it returns.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, cfg) }()
	for range cfg.Listen {
		select {
		case a := <-listening:
			d.addrs = append(d.addrs, a)
		case err := <-done:
			cancel()
			t.Fatalf("Serve: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not listen within 10s")
		}
	}
	var once sync.Once
	var serveErr error
	d.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(15 * time.Second):
				serveErr = errors.New("serve did not return within 15s of its context ending")
			}
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := d.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return d
}

func dial(t *testing.T, addr string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(addr, opts...)
	if err != nil {
		t.Fatalf("Dial(%s): %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ptr32(v int32) *int32 { return &v }

// exerciseRPCs runs every unary call once through c against an empty fake.
func exerciseRPCs(t *testing.T, c *client.Client) {
	ctx := t.Context()
	br, err := c.ApplyBridge(ctx, connect.NewRequest(&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{
		Name: "br0", DatapathType: "netdev", Protocols: []string{"OpenFlow13"}, ExternalIds: map[string]string{"k": "v"}}}))
	if err != nil {
		t.Fatalf("ApplyBridge: %v", err)
	}
	if got := br.Msg.Bridge; got.Spec.DatapathType != "netdev" || got.Origin != v1.Origin_ORIGIN_API ||
		got.Status.State != v1.State_STATE_READY || got.Status.Key != "bridge/br0" {
		t.Errorf("ApplyBridge returned %v", got)
	}
	if got, err := c.GetBridge(ctx, connect.NewRequest(&v1.GetBridgeRequest{Name: "br0"})); err != nil || got.Msg.Bridge.Spec.ExternalIds["k"] != "v" {
		t.Errorf("GetBridge = %v, %v", got, err)
	}
	p, err := c.ApplyPort(ctx, connect.NewRequest(&v1.ApplyPortRequest{Bridge: "br0", Port: &v1.Port{
		Name: "vhu1", Tag: ptr32(0), Interfaces: []*v1.Interface{{Name: "vhu1", Type: "dpdkvhostuser", MtuRequest: ptr32(9000)}}}}))
	if err != nil {
		t.Fatalf("ApplyPort: %v", err)
	}
	if got := p.Msg.Port; got.Bridge != "br0" || got.Spec.Tag == nil || *got.Spec.Tag != 0 || len(got.Interfaces) != 1 ||
		got.Interfaces[0].Ofport == 0 || got.Interfaces[0].State != v1.State_STATE_READY {
		t.Errorf("ApplyPort returned %v", got)
	}
	refused, err := c.ApplyPort(ctx, connect.NewRequest(&v1.ApplyPortRequest{Bridge: "br0", Port: &v1.Port{
		Name: "dpdk0", Interfaces: []*v1.Interface{{Name: "dpdk0", Type: "dpdk", Options: map[string]string{apitest.RefuseOption: "could not open network device dpdk0 (No such device)"}}}}}))
	if err != nil {
		t.Fatalf("ApplyPort of a refused interface must not fail: %v", err)
	}
	if st := refused.Msg.Port.Interfaces[0]; st.State != v1.State_STATE_ERROR || !strings.Contains(st.Error, "No such device") {
		t.Errorf("refused interface status = %v", st)
	}
	if got, err := c.GetPort(ctx, connect.NewRequest(&v1.GetPortRequest{Name: "vhu1"})); err != nil || got.Msg.Port.Spec.Interfaces[0].GetMtuRequest() != 9000 {
		t.Errorf("GetPort = %v, %v", got, err)
	}
	if got, err := c.ListPorts(ctx, connect.NewRequest(&v1.ListPortsRequest{Bridge: "br0"})); err != nil || len(got.Msg.Ports) != 2 || got.Msg.Ports[0].Spec.Name != "dpdk0" {
		t.Errorf("ListPorts = %v, %v", got, err)
	}
	if got, err := c.ListBridges(ctx, connect.NewRequest(&v1.ListBridgesRequest{})); err != nil || len(got.Msg.Bridges) != 1 {
		t.Errorf("ListBridges = %v, %v", got, err)
	}
	st, err := c.ListStatus(ctx, connect.NewRequest(&v1.ListStatusRequest{}))
	if err != nil || len(st.Msg.Statuses) != 5 { // bridge, 2 ports, 2 interfaces
		t.Errorf("ListStatus = %v, %v", st, err)
	}
	if got, err := c.WaitReady(ctx, connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/vhu1", "interface/vhu1"}})); err != nil || len(got.Msg.Statuses) != 2 {
		t.Errorf("WaitReady = %v, %v", got, err)
	}
	h, err := c.Health(ctx, connect.NewRequest(&v1.HealthRequest{}))
	if err != nil || h.Msg.Version != model.Version || h.Msg.ApiVersion != "ovsplane.v1" || h.Msg.Mode != v1.Mode_MODE_EMBEDDED || h.Msg.Objects["ready"] != 3 {
		t.Errorf("Health = %v, %v", h, err)
	}
	if _, err := c.Reload(ctx, connect.NewRequest(&v1.ReloadRequest{})); err != nil {
		t.Errorf("Reload: %v", err)
	}
	if _, err := c.DeletePort(ctx, connect.NewRequest(&v1.DeletePortRequest{Name: "vhu1"})); err != nil {
		t.Errorf("DeletePort: %v", err)
	}
	if _, err := c.GetPort(ctx, connect.NewRequest(&v1.GetPortRequest{Name: "vhu1"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("GetPort after DeletePort: %v, want NotFound", err)
	}
	if _, err := c.DeleteBridge(ctx, connect.NewRequest(&v1.DeleteBridgeRequest{Name: "br0"})); err != nil {
		t.Errorf("DeleteBridge: %v", err)
	}
	if got, err := c.ListPorts(ctx, connect.NewRequest(&v1.ListPortsRequest{})); err != nil || len(got.Msg.Ports) != 0 {
		t.Errorf("ListPorts after DeleteBridge = %v, %v (its ports go with it)", got, err)
	}
}

func TestEveryRPCOverUnixSocket(t *testing.T) {
	for _, proto := range []string{"grpc", "connect"} {
		t.Run(proto, func(t *testing.T) {
			d := startDaemon(t, config.API{Listen: []string{"unix:SOCK"}})
			var opts []client.Option
			if proto == "connect" {
				opts = append(opts, client.WithConnectProtocol())
			}
			exerciseRPCs(t, dial(t, d.addrs[0], opts...))
		})
	}
}

func TestEveryRPCOverTLS(t *testing.T) {
	p := newPKI(t)
	d := startDaemon(t, config.API{Listen: []string{"tcp:127.0.0.1:0"},
		TLS:  model.TLS{Certificate: p.ServerCert, PrivateKey: p.ServerKey, CACert: p.CA},
		Auth: config.Auth{Admins: config.Principals{Subjects: []string{"vsctl"}}}})
	if !strings.HasPrefix(d.addrs[0], "tcp:127.0.0.1:") || strings.HasSuffix(d.addrs[0], ":0") {
		t.Fatalf("OnListen reported %q, want the actual port", d.addrs[0])
	}
	c := dial(t, d.addrs[0], client.WithTLS(model.TLS{CACert: p.CA, Certificate: p.ClientCert, PrivateKey: p.ClientKey}))
	exerciseRPCs(t, c)

	t.Run("untrusted client certificate refused", func(t *testing.T) {
		rogue := dial(t, d.addrs[0], client.WithTLS(model.TLS{CACert: p.CA, Certificate: p.RogueCert, PrivateKey: p.RogueKey}))
		_, err := rogue.ApplyBridge(t.Context(), connect.NewRequest(&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: "rogue"}}))
		// The server ends the handshake; the client sees it as Unavailable, or as Canceled when
		// it was still writing the request (a broken pipe): a race, both mean refused.
		if c := connect.CodeOf(err); err == nil || (c != connect.CodeUnavailable && c != connect.CodeCanceled) {
			t.Errorf("call with an untrusted client certificate: %v, want Unavailable (or Canceled)", err)
		}
		if _, err := d.fake.Bridge("rogue"); err == nil {
			t.Error("the untrusted client's call was served")
		}
	})
	t.Run("no client certificate refused", func(t *testing.T) {
		anon := dial(t, d.addrs[0], client.WithTLS(model.TLS{CACert: p.CA}))
		if _, err := anon.ListBridges(t.Context(), connect.NewRequest(&v1.ListBridgesRequest{})); err == nil {
			t.Error("call without a client certificate succeeded; the server has a ca_cert")
		}
	})
	t.Run("server not trusted by the client", func(t *testing.T) {
		c := dial(t, d.addrs[0])
		_, err := c.ListBridges(t.Context(), connect.NewRequest(&v1.ListBridgesRequest{}))
		if !errors.Is(err, client.ErrUnreachable) || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("call to a server signed by an unknown CA: %v, want ErrUnreachable naming the certificate", err)
		}
	})
}

func TestTCPNeedsTLS(t *testing.T) {
	srv := apiserver.New(apitest.New(), apiserver.Options{})
	err := srv.Serve(t.Context(), config.API{Listen: []string{"tcp:127.0.0.1:0"}})
	if err == nil || !strings.Contains(err.Error(), "api.listen[0]") || !strings.Contains(err.Error(), "api.tls.certificate") {
		t.Fatalf("Serve on tcp: without TLS = %v, want an error naming api.listen[0] and api.tls.certificate", err)
	}
}

// httpUnix returns an HTTP/1.1 client that reaches the socket whatever the URL's host.
func httpUnix(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

func postJSON(t *testing.T, sock, method, body string) (int, map[string]any, string) {
	t.Helper()
	resp, err := httpUnix(sock).Post("http://localhost/ovsplane.v1.SwitchService/"+method, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 1 {
		t.Errorf("response over HTTP/%d, want HTTP/1.1", resp.ProtoMajor)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: response %q is not JSON: %v", method, raw, err)
	}
	return resp.StatusCode, m, string(raw)
}

func TestConnectJSONOverHTTP1(t *testing.T) {
	d := startDaemon(t, config.API{Listen: []string{"unix:SOCK"}})
	seed(t, d)

	t.Run("GetPort", func(t *testing.T) {
		code, m, raw := postJSON(t, d.sock, "GetPort", `{"name":"p1"}`)
		if code != 200 || !strings.Contains(raw, `"name":"p1"`) || !strings.Contains(raw, `"STATE_READY"`) {
			t.Errorf("GetPort: HTTP %d %s", code, raw)
		}
		if port, _ := m["port"].(map[string]any); port["bridge"] != "br0" {
			t.Errorf("GetPort: bridge = %v", port["bridge"])
		}
	})
	t.Run("not found", func(t *testing.T) {
		code, m, raw := postJSON(t, d.sock, "GetPort", `{"name":"nope"}`)
		if code != 404 || m["code"] != "not_found" || !strings.Contains(raw, `nope`) {
			t.Errorf("GetPort of a missing port: HTTP %d %s", code, raw)
		}
	})
	t.Run("malformed JSON", func(t *testing.T) {
		code, m, raw := postJSON(t, d.sock, "GetPort", `{"name":`)
		if code != 400 || m["code"] != "invalid_argument" || !strings.Contains(raw, "unmarshal") {
			t.Errorf("malformed JSON: HTTP %d %s, want 400 invalid_argument", code, raw)
		}
	})
	t.Run("unknown field ignored", func(t *testing.T) {
		// Forward compatibility within v1: a newer client's fields are ignored, so a misspelt
		// field shows up as the required one missing.
		code, m, raw := postJSON(t, d.sock, "GetPort", `{"nmae":"p1"}`)
		if code != 400 || m["code"] != "invalid_argument" || !strings.Contains(raw, "name is required") {
			t.Errorf("unknown field: HTTP %d %s, want 400 invalid_argument, name is required", code, raw)
		}
	})
	t.Run("wrong type", func(t *testing.T) {
		code, m, raw := postJSON(t, d.sock, "GetPort", `{"name":7}`)
		if code != 400 || m["code"] != "invalid_argument" || !strings.Contains(raw, "name") {
			t.Errorf("wrong type: HTTP %d %s, want 400 invalid_argument naming the field", code, raw)
		}
	})
	t.Run("missing name", func(t *testing.T) {
		code, m, raw := postJSON(t, d.sock, "GetPort", `{}`)
		if code != 400 || m["code"] != "invalid_argument" || !strings.Contains(raw, "name is required") {
			t.Errorf("missing name: HTTP %d %s", code, raw)
		}
	})
	t.Run("curl", func(t *testing.T) {
		curl, err := exec.LookPath("curl")
		if err != nil {
			t.Skip("curl is not installed (apt-get install curl); the same request went through net/http above")
		}
		out, err := exec.Command(curl, "-sS", "--unix-socket", d.sock, "-H", "Content-Type: application/json",
			"-d", `{"name":"p1"}`, "http://localhost/ovsplane.v1.SwitchService/GetPort").CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, out)
		}
		var resp map[string]any
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("curl output %q is not JSON: %v", out, err)
		}
		if port, _ := resp["port"].(map[string]any); port["bridge"] != "br0" {
			t.Errorf("curl GetPort: %s", out)
		}
	})
}

func seed(t *testing.T, d *daemon) {
	t.Helper()
	ctx := t.Context()
	if _, err := d.fake.ApplyBridge(ctx, model.Bridge{Name: "br0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.fake.ApplyPort(ctx, "br0", model.Port{Name: "p1", Interfaces: []model.Interface{{Name: "p1"}}}); err != nil {
		t.Fatal(err)
	}
}

func TestHugeRequestIsResourceExhausted(t *testing.T) {
	d := startDaemon(t, config.API{Listen: []string{"unix:SOCK"}})
	seed(t, d)
	big := map[string]string{"blob": strings.Repeat("x", apiserver.DefaultMaxRequestBytes+1)}
	req := &v1.ApplyPortRequest{Bridge: "br0", Port: &v1.Port{Name: "p2", ExternalIds: big, Interfaces: []*v1.Interface{{Name: "p2"}}}}
	for _, proto := range []string{"grpc", "connect"} {
		var opts []client.Option
		if proto == "connect" {
			opts = append(opts, client.WithConnectProtocol())
		}
		_, err := dial(t, d.addrs[0], opts...).ApplyPort(t.Context(), connect.NewRequest(req))
		if connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Errorf("%s: huge ApplyPort: %v, want ResourceExhausted", proto, err)
		}
	}
	body, _ := json.Marshal(map[string]any{"name": strings.Repeat("y", apiserver.DefaultMaxRequestBytes+1)})
	code, m, _ := postJSON(t, d.sock, "GetPort", string(body))
	if m["code"] != "resource_exhausted" {
		t.Errorf("huge JSON request: HTTP %d %v, want resource_exhausted", code, m["code"])
	}
	if _, err := d.fake.Port("p2"); err == nil {
		t.Error("the huge request was applied")
	}
}

func TestErrorMapping(t *testing.T) {
	d, c := startSeeded(t)
	for _, tc := range []struct {
		err  error
		want connect.Code
	}{
		{fmt.Errorf("port %q: unknown type %q: %w", "p1", "bogus", model.ErrInvalid), connect.CodeInvalidArgument},
		{fmt.Errorf("port %q: %w", "p1", model.ErrNotFound), connect.CodeNotFound},
		{fmt.Errorf("port %q comes from the config file; edit it and reload: %w", "p1", model.ErrConflict), connect.CodeFailedPrecondition},
		{fmt.Errorf("port %q: OVSDB: %w", "p1", model.ErrUnavailable), connect.CodeUnavailable},
		{fmt.Errorf("port %q: %w", "p1", context.DeadlineExceeded), connect.CodeDeadlineExceeded},
		{fmt.Errorf("port %q: %w", "p1", context.Canceled), connect.CodeCanceled},
		{errors.New("port \"p1\": something odd"), connect.CodeInternal},
	} {
		t.Run(tc.want.String(), func(t *testing.T) {
			d.fake.SetError(tc.err)
			defer d.fake.SetError(nil)
			_, err := c.GetPort(t.Context(), connect.NewRequest(&v1.GetPortRequest{Name: "p1"}))
			if connect.CodeOf(err) != tc.want {
				t.Errorf("GetPort with backend error %q: %v, want %v", tc.err, err, tc.want)
			}
			var ce *connect.Error
			if !errors.As(err, &ce) || ce.Message() != tc.err.Error() {
				t.Errorf("message = %q, want the backend's %q", ce.Message(), tc.err.Error())
			}
			_, err = c.ApplyPort(t.Context(), connect.NewRequest(&v1.ApplyPortRequest{Bridge: "br0", Port: &v1.Port{Name: "p1", Interfaces: []*v1.Interface{{Name: "p1"}}}}))
			if connect.CodeOf(err) != tc.want {
				t.Errorf("ApplyPort with backend error %q: %v, want %v", tc.err, err, tc.want)
			}
		})
	}
	t.Run("real conflicts", func(t *testing.T) {
		d.fake.AddConfigBridge(model.Bridge{Name: "br-cfg"})
		_, err := c.DeleteBridge(t.Context(), connect.NewRequest(&v1.DeleteBridgeRequest{Name: "br-cfg"}))
		if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "config file") {
			t.Errorf("DeleteBridge of a config bridge: %v", err)
		}
		_, err = c.ApplyPort(t.Context(), connect.NewRequest(&v1.ApplyPortRequest{Bridge: "br-x", Port: &v1.Port{Name: "q", Interfaces: []*v1.Interface{{Name: "q"}}}}))
		if connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), `bridge "br-x"`) {
			t.Errorf("ApplyPort on a missing bridge: %v", err)
		}
	})
	t.Run("reload rejected", func(t *testing.T) {
		d.fake.SetReload(func() error {
			return fmt.Errorf("/etc/ovsplane/ovsplaned.yaml: 1 problem(s):\nbridges[0].name: required: %w", model.ErrInvalid)
		})
		_, err := c.Reload(t.Context(), connect.NewRequest(&v1.ReloadRequest{}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "bridges[0].name: required") {
			t.Errorf("Reload of an invalid file: %v", err)
		}
	})
}

// A small answer goes uncompressed to a client that accepts gzip (compressing it costs more
// than it saves on a local socket); one above CompressMinBytes is compressed.
func TestCompressOnlyLargeResponses(t *testing.T) {
	d := startDaemon(t, config.API{Listen: []string{"unix:SOCK"}})
	seed(t, d)
	for i := range 60 {
		name := fmt.Sprintf("port-with-a-long-name-%03d", i)
		if _, err := d.fake.ApplyPort(t.Context(), "br0", model.Port{Name: name, Interfaces: []model.Interface{{Name: name}}}); err != nil {
			t.Fatal(err)
		}
	}
	post := func(method, body string) (encoding string, size int) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost/ovsplane.v1.SwitchService/"+method, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport leaves the body as sent
		resp, err := httpUnix(d.sock).Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", method, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", method, resp.StatusCode, raw)
		}
		return resp.Header.Get("Content-Encoding"), len(raw)
	}
	if enc, n := post("GetPort", `{"name":"p1"}`); enc != "" {
		t.Errorf("GetPort's answer (%d bytes) sent with Content-Encoding %q, want none below %d bytes", n, enc, apiserver.CompressMinBytes)
	}
	if enc, n := post("ListPorts", `{"bridge":"br0"}`); enc != "gzip" {
		t.Errorf("ListPorts' answer of 61 ports (%d bytes) sent with Content-Encoding %q, want gzip", n, enc)
	}
}
