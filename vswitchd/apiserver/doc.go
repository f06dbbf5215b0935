// Package apiserver serves ovsplaned's API, the ovsplane.v1 SwitchService (api/proto), over
// connect-rpc: gRPC, gRPC-Web and Connect (JSON or binary) on the same listeners.
//
// The daemon core implements Backend; New wraps one in an http.Handler that converts requests
// (api/convert), calls the Backend and maps its errors to status codes (ErrInvalid →
// InvalidArgument, ErrNotFound → NotFound, ErrConflict → FailedPrecondition, ErrUnavailable →
// Unavailable, context errors → Canceled / DeadlineExceeded, anything else → Internal), keeping
// the Backend's message, which names the object and the fix. Server.Serve listens on every
// address of a config.API: unix sockets (created with the configured mode and group; HTTP/1.1
// and unencrypted HTTP/2, so gRPC works without TLS) and tcp: addresses (TLS only, client
// certificates verified when a CA is configured), and shuts down gracefully when its context
// ends.
//
// This package imports vswitchd for its types; the daemon core must therefore not import it:
// the daemon's main wires the two (apiserver.New(daemon, ...).Serve(ctx, cfg.API)).
package apiserver
