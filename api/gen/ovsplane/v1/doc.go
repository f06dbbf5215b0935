// Package ovsplanev1 holds the messages of the ovsplane.v1 API, generated from
// api/proto/ovsplane/v1 by `make proto` (every file here but this one is generated).
package ovsplanev1
