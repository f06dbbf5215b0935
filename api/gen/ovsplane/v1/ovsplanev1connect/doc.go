// Package ovsplanev1connect holds the connect-rpc client and handler of the ovsplane.v1
// SwitchService, generated from api/proto/ovsplane/v1 by `make proto` (every file here but this
// one is generated). It speaks gRPC, gRPC-Web and Connect.
package ovsplanev1connect
