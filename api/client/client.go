package client

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

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/gen/ovsplane/v1/ovsplanev1connect"
	"github.com/ovsplane/ovsplane/model"
)

// EnvAddr names the environment variable that overrides the default address
// (model.DefaultAPIAddr) in the command-line tools.
const EnvAddr = "OVSPLANE_API"

// ErrUnreachable matches (errors.Is) the error of a call that could not connect to the daemon:
// no socket file, nothing listening, connection refused, or a failed TLS handshake.
var ErrUnreachable = errors.New("ovsplaned is not reachable")

// Client is a connection to ovsplaned: the generated SwitchService client plus Close. It is
// safe for concurrent use; concurrent calls share HTTP/2 connections.
type Client struct {
	ovsplanev1connect.SwitchServiceClient
	addr      string
	transport *http.Transport
}

// Addr returns the address the Client was dialed with.
func (c *Client) Addr() string { return c.addr }

// Close releases the Client's idle connections. Calls in flight are not interrupted.
func (c *Client) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}

type options struct {
	tls        model.TLS
	serverName string
	connect    bool
	copts      []connect.ClientOption
}

// Option configures Dial.
type Option func(*options)

// WithTLS sets the TLS files for a tcp: address: CACert verifies the daemon's certificate
// (the system roots when empty); Certificate and PrivateKey are the client's certificate,
// which the daemon requires on every tcp: listener (mutual TLS) and maps to a role by its
// names (api.auth.*.subjects): without one the daemon ends the handshake.
func WithTLS(t model.TLS) Option { return func(o *options) { o.tls = t } }

// WithServerName sets the name the daemon's certificate must carry (default: the host of
// the tcp: address).
func WithServerName(name string) Option { return func(o *options) { o.serverName = name } }

// WithConnectProtocol makes the client speak the Connect protocol (binary) instead of gRPC.
func WithConnectProtocol() Option { return func(o *options) { o.connect = true } }

// WithClientOptions adds connect-rpc client options (interceptors, read limits...).
func WithClientOptions(opts ...connect.ClientOption) Option {
	return func(o *options) { o.copts = append(o.copts, opts...) }
}

// Dial returns a Client for addr, "unix:PATH" or "tcp:HOST:PORT" (TLS). It reads the TLS
// files but does not connect: the first call does, and a daemon that is not running is
// reported then (ErrUnreachable).
func Dial(addr string, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	kind, rest, _ := strings.Cut(addr, ":")
	var (
		t       *http.Transport
		baseURL string
		err     error
	)
	switch kind {
	case "unix":
		if rest == "" {
			return nil, fmt.Errorf("API address %q has no socket path (write unix:%s)", addr, strings.TrimPrefix(model.DefaultAPIAddr(), "unix:"))
		}
		t = unixTransport(addr, rest)
		baseURL = "http://ovsplaned"
	case "tcp":
		if _, _, err := net.SplitHostPort(rest); err != nil {
			return nil, fmt.Errorf("API address %q is not tcp:HOST:PORT", addr)
		}
		if t, err = tlsTransport(addr, rest, o); err != nil {
			return nil, err
		}
		baseURL = "https://" + rest
	default:
		return nil, fmt.Errorf("API address %q must start with \"unix:\" or \"tcp:\"", addr)
	}
	copts := append([]connect.ClientOption{}, o.copts...)
	if !o.connect {
		copts = append(copts, connect.WithGRPC())
	}
	c := ovsplanev1connect.NewSwitchServiceClient(&http.Client{Transport: t}, baseURL, copts...)
	return &Client{SwitchServiceClient: c, addr: addr, transport: t}, nil
}

// unreachable marks a connection failure with ErrUnreachable and the address.
type unreachable struct {
	addr string
	err  error
}

func (e *unreachable) Error() string {
	return fmt.Sprintf("cannot connect to ovsplaned at %s: %v", e.addr, e.err)
}

func (e *unreachable) Unwrap() []error { return []error{ErrUnreachable, e.err} }

func unixTransport(addr, path string) *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	var d net.Dialer
	return &http.Transport{
		Protocols: &p,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				return nil, &unreachable{addr: addr, err: err}
			}
			return c, nil
		},
	}
}

func tlsTransport(addr, hostport string, o options) (*http.Transport, error) {
	host, _, _ := net.SplitHostPort(hostport)
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if o.serverName != "" {
		tc.ServerName = o.serverName
	}
	if o.tls.CACert != "" {
		pem, err := os.ReadFile(o.tls.CACert)
		if err != nil {
			return nil, fmt.Errorf("API CA certificate: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("API CA certificate: %s holds no PEM certificate", o.tls.CACert)
		}
	}
	if o.tls.Certificate != "" || o.tls.PrivateKey != "" {
		cert, err := tls.LoadX509KeyPair(o.tls.Certificate, o.tls.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("API client certificate %s and key %s: %w", o.tls.Certificate, o.tls.PrivateKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	var p http.Protocols
	p.SetHTTP2(true)
	var d net.Dialer
	return &http.Transport{
		Protocols:       &p,
		TLSClientConfig: tc,
		DialTLSContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			raw, err := d.DialContext(ctx, network, a)
			if err != nil {
				return nil, &unreachable{addr: addr, err: err}
			}
			cfg := tc.Clone()
			cfg.NextProtos = []string{"h2"}
			c := tls.Client(raw, cfg)
			if err := c.HandshakeContext(ctx); err != nil {
				_ = raw.Close()
				return nil, &unreachable{addr: addr, err: fmt.Errorf("TLS handshake: %w", err)}
			}
			return c, nil
		},
	}, nil
}
