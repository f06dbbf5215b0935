package client

import (
	"net/http"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/gen/ovsplane/v1/ovsplanev1connect"
	"github.com/ovsplane/ovsplane/internal/apitransport"
	"github.com/ovsplane/ovsplane/model"
)

// EnvAddr names the environment variable that overrides the default address
// (model.DefaultAPIAddr) in the command-line tools.
const EnvAddr = "OVSPLANE_API"

// ErrUnreachable matches (errors.Is) the error of a call that could not connect to the daemon:
// no socket file, nothing listening, connection refused, or a failed TLS handshake.
var ErrUnreachable = apitransport.ErrUnreachable

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
	t, baseURL, err := apitransport.New(addr, o.tls, o.serverName)
	if err != nil {
		return nil, err
	}
	copts := append([]connect.ClientOption{}, o.copts...)
	if !o.connect {
		copts = append(copts, connect.WithGRPC())
	}
	c := ovsplanev1connect.NewSwitchServiceClient(&http.Client{Transport: t}, baseURL, copts...)
	return &Client{SwitchServiceClient: c, addr: addr, transport: t}, nil
}
