// Package api holds the contract of the ovsplaned API: the protobuf definitions in
// proto/ovsplane/v1 and the Go code generated from them in gen/ovsplane/v1 (messages) and
// gen/ovsplane/v1/ovsplanev1connect (connect-rpc client and handler). `make proto` regenerates
// the code; this package's test fails when the committed code is not what the pinned
// generators produce. Conversions between the messages and the daemon's types are in
// api/convert. The package itself has no code.
package api
