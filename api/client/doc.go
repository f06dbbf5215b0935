// Package client connects Go programs to ovsplaned's API, the ovsplane.v1 SwitchService (see
// vswitchd/apiserver and docs/api.md, whose Versioning section says what v1 promises).
//
// # Connecting
//
// Dial returns a Client embedding the generated connect-rpc client of the SwitchService
// (api/gen/ovsplane/v1/ovsplanev1connect), speaking gRPC over HTTP/2: without TLS on a unix:
// socket (h2c), with TLS on a tcp: address (WithTLS; the daemon requires a client certificate
// there). WithConnectProtocol switches to the Connect protocol. Dial does not connect; the first
// call does. A Client is safe for concurrent use and shares its connections between calls; Close
// it when done.
//
// Where the daemon is: model.DefaultAPIAddr() (unix:/var/lib/ovsplane/ovsplaned.sock), unless
// $OVSPLANE_API (EnvAddr) or the program's own setting names another address, as vsctl does.
//
// # Calls
//
// Every method takes a context (its deadline is sent to the daemon, which gives up at the same
// time) and a connect.Request of the api/gen/ovsplane/v1 message; the answer is in Msg. The
// apply calls set the whole desired state of one object and are idempotent; they return once
// ovs-vswitchd has applied it; WaitReady waits for objects named by key ("port/NAME"); Watch is
// a server stream of status changes. api/convert converts between the messages and the
// daemon's model types.
//
// # Errors
//
// connect.CodeOf(err) gives a failed call's code: connect.CodeNotFound for an object ovsplane
// does not manage, CodeInvalidArgument and CodeFailedPrecondition for requests the daemon
// refused (nothing was written), CodeUnavailable when OVSDB or the daemon is away (the daemon's
// errors carry a retry delay; the writes are idempotent, so sending the same request again is
// safe), CodePermissionDenied for a caller whose role does not allow the call. When the daemon
// cannot be reached at all (no socket, nothing listening, a failed TLS handshake), the error
// also matches ErrUnreachable (errors.Is) and names the address. Messages name the object and
// the fix; match on codes, not on message text.
//
// # Embedding
//
// A program that embeds the client links this package, the generated code (api/gen), the
// model types (model, for WithTLS and the default address) and connectrpc.com/connect, not the
// daemon: its imports stay in the API layer (internal/layers checks it). The Example plugs a
// vhost-user port into a bridge: dial, apply, wait, read back, handle errors, delete.
package client
