// Package client connects to ovsplaned's API (see vswitchd/apiserver and docs/api.md).
//
// Dial returns a Client embedding the generated connect-rpc client of the ovsplane.v1
// SwitchService, speaking gRPC over HTTP/2: without TLS on a unix: socket (h2c), with TLS on a
// tcp: address. Conversions between the API's messages and the daemon's types are in
// api/convert. When the daemon cannot be reached, calls fail with an error matching
// ErrUnreachable (errors.Is) that names the address.
package client
