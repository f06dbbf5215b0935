// Package apitransport opens the HTTP/2 transport to ovsplaned's API that both of its clients
// use: api/client (connect-go, gRPC or the Connect protocol) and vsctl's thin client in
// internal/cli/daemoncmd (the Connect protocol's JSON form, without the protobuf runtime). It
// parses the address, and for tcp: reads the TLS files; it imports only the standard library
// and model, so linking it costs vsctl nothing at start-up.
package apitransport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/ovsplane/ovsplane/model"
)

// ErrUnreachable matches (errors.Is) the error of a call that could not connect to the daemon:
// no socket file, nothing listening, connection refused, or a failed TLS handshake.
var ErrUnreachable = errors.New("ovsplaned is not reachable")

// UnreachableError is a dial failure to the daemon at Addr; errors.Is(err, ErrUnreachable)
// holds, and Err is the connection error.
type UnreachableError struct {
	Addr string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot connect to ovsplaned at %s: %v", e.Addr, e.Err)
}

// Unwrap makes errors.Is(err, ErrUnreachable) hold and exposes the connection error.
func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

// New returns the transport for addr, "unix:PATH" (HTTP/2 without TLS over the socket) or
// "tcp:HOST:PORT" (HTTP/2 over TLS: t's CACert verifies the daemon, the system roots when
// empty; t's Certificate and PrivateKey are the client's certificate, which the daemon
// requires on tcp:), and the base URL of requests through it. serverName overrides the name the
// daemon's certificate must carry (default: HOST). It reads the TLS files but opens no
// connection; a failed dial or handshake is an *UnreachableError. An address of another form
// is refused with a message saying which forms there are.
func New(addr string, t model.TLS, serverName string) (tr *http.Transport, baseURL string, err error) {
	kind, rest, _ := strings.Cut(addr, ":")
	var d net.Dialer
	switch kind {
	case "unix":
		if rest == "" {
			return nil, "", fmt.Errorf("API address %q has no socket path (write unix:%s)", addr, strings.TrimPrefix(model.DefaultAPIAddr(), "unix:"))
		}
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		return &http.Transport{
			Protocols: &p,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				nc, err := d.DialContext(ctx, "unix", rest)
				if err != nil {
					return nil, &UnreachableError{Addr: addr, Err: err}
				}
				return nc, nil
			},
		}, "http://ovsplaned", nil
	case "tcp":
		host, _, err := net.SplitHostPort(rest)
		if err != nil {
			return nil, "", fmt.Errorf("API address %q is not tcp:HOST:PORT", addr)
		}
		if serverName != "" {
			host = serverName
		}
		tc, err := tlsConfig(host, t)
		if err != nil {
			return nil, "", err
		}
		var p http.Protocols
		p.SetHTTP2(true)
		return &http.Transport{
			Protocols:       &p,
			TLSClientConfig: tc,
			DialTLSContext: func(ctx context.Context, network, a string) (net.Conn, error) {
				raw, err := d.DialContext(ctx, network, a)
				if err != nil {
					return nil, &UnreachableError{Addr: addr, Err: err}
				}
				cfg := tc.Clone()
				cfg.NextProtos = []string{"h2"}
				c := tls.Client(raw, cfg)
				if err := c.HandshakeContext(ctx); err != nil {
					_ = raw.Close()
					return nil, &UnreachableError{Addr: addr, Err: fmt.Errorf("TLS handshake: %w", err)}
				}
				return c, nil
			},
		}, "https://" + rest, nil
	default:
		return nil, "", fmt.Errorf("API address %q must start with \"unix:\" or \"tcp:\"", addr)
	}
}

// tlsConfig is the client side of the API's TLS for a daemon named host.
func tlsConfig(host string, t model.TLS) (*tls.Config, error) {
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if t.CACert != "" {
		pem, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("API CA certificate: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("API CA certificate: %s holds no PEM certificate", t.CACert)
		}
	}
	if t.Certificate != "" || t.PrivateKey != "" {
		cert, err := tls.LoadX509KeyPair(t.Certificate, t.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("API client certificate %s and key %s: %w", t.Certificate, t.PrivateKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
