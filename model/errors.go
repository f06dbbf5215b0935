package model

import "errors"

// The error kinds of ovsplane, matched with errors.Is. Every layer wraps them (with %w) in
// errors that name the object and the fix: the OVSDB layer (ovsdb) for ErrInvalid and
// ErrNotFound, the daemon (vswitchd) for all of them; the API server maps them to status codes
// (ErrInvalid → InvalidArgument, ErrNotFound → NotFound, ErrConflict → FailedPrecondition,
// ErrUnavailable → Unavailable).
var (
	// ErrInvalid: the request is malformed (bad name, unknown type, missing option…). Nothing
	// was written.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound: the named object is not managed by ovsplane, or a row the operation depends
	// on (such as the bridge of a port) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request contradicts existing state (an object of the config file, a port
	// on another bridge, a name held by a row ovsplane does not own). Nothing was written.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: OVSDB or ovs-vswitchd could not be reached or did not answer in time; the
	// outcome may be unknown, and the reconciler converges either way. While the OVSDB
	// connection is down, the daemon's writes end with it after its Options.Commit.ReconnectWait,
	// wrapping an *ovsdb.DisconnectedError that says whether nothing was applied or the outcome
	// is unknown.
	ErrUnavailable = errors.New("unavailable")
	// ErrFailed: an object the daemon's WaitReady waits for is in the error state
	// (ovs-vswitchd refused it, or the last reconcile pass failed); the message says why.
	ErrFailed = errors.New("failed")
)
