// Package apiserver serves ovsplaned's API, the ovsplane.v1 SwitchService (api/proto), over
// connect-rpc: gRPC, gRPC-Web and Connect (JSON or binary) on the same listeners.
//
// The daemon core implements Backend; New wraps one in an http.Handler that converts requests
// (api/convert), calls the Backend and maps its errors to status codes (ErrInvalid →
// InvalidArgument, ErrNotFound → NotFound, ErrConflict → FailedPrecondition, ErrUnavailable →
// Unavailable, context errors → Canceled / DeadlineExceeded, anything else → Internal), keeping
// the Backend's message, which names the object and the fix. Server.Serve listens on every
// address of a config.API: unix sockets (created with the configured mode and group; HTTP/1.1
// and unencrypted HTTP/2, so gRPC works without TLS) and tcp: addresses (mutual TLS only: a
// client CA is required and every client presents a certificate it signed), and shuts down
// gracefully when its context ends.
//
// Every caller is identified — unix peers by the kernel (SO_PEERCRED, SO_PEERGROUPS), TCP peers
// by their verified certificate — and given a Role (admin, reader or none) by config.Auth; an
// HTTP middleware in front of the connect handlers classifies every request's path (IsWrite:
// anything not a known read is a write) and refuses what the role does not allow with
// PermissionDenied before the body is read, naming the caller and the key to change (a connect
// interceptor checks again behind it). Every write and every refusal goes to the audit logger
// (Options.Audit): one line, "api audit", with the procedure, the caller (transport; uid, gid,
// pid or the certificate subject and names), its role, the object names (not for refusals),
// the result ("ok" or the code) and the duration — never request contents. Listeners bound headers and bodies in time and
// size (Options.ReadHeaderTimeout, BodyTimeout, IdleTimeout, MaxHeaderBytes); the body
// deadline ends with the body, so streams (Watch) and waits are not cut.
//
// This package imports vswitchd for its types; the daemon core must therefore not import it:
// the daemon's main wires the two (apiserver.New(daemon, ...).Serve(ctx, cfg.API)).
package apiserver
