package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

var (
	// ErrClosed is the error of a connection ended by Close.
	ErrClosed = errors.New("jsonrpc: connection closed")
	// ErrMalformed is matched by the error of a connection ended by input that is not JSON, not
	// a JSON-RPC message, or a message breaking the protocol (such as an update2 for the
	// monitor before the monitor's reply).
	ErrMalformed = errors.New("jsonrpc: malformed input")
)

// RPCError is a reply whose "error" member is not null. OVSDB's errors are objects with an
// "error" string and an optional "details" string (RFC 7047 §3.1); a bare string is taken as
// Err; anything else is kept in Raw only.
type RPCError struct {
	Method  string          // the request's method
	Err     string          // the "error" string
	Details string          // the "details" string, if any
	Raw     json.RawMessage // the "error" member as received
}

func (e *RPCError) Error() string {
	msg := e.Err
	if msg == "" {
		msg = string(e.Raw)
	}
	if e.Details != "" {
		msg += " (" + e.Details + ")"
	}
	return fmt.Sprintf("jsonrpc: %s: server error: %s", e.Method, msg)
}

// newRPCError parses raw, an "error" member that is not null.
func newRPCError(method string, raw []byte) *RPCError {
	e := &RPCError{Method: method, Raw: json.RawMessage(raw)}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		e.Err = s
		return e
	}
	var obj struct {
		Error   string `json:"error"`
		Details string `json:"details"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		e.Err, e.Details = obj.Error, obj.Details
	}
	return e
}

// CallError is the failure of a Call or Monitor that got no reply: its context ended, the
// connection ended, or the request could not be sent. Written tells whether the whole request
// had been handed to the transport: if it had, the server may have executed it and its outcome
// is unknown; if not, it was not executed.
type CallError struct {
	Method  string
	Written bool
	Err     error // ctx.Err(), the connection's Err(), or the write error
}

func (e *CallError) Error() string {
	if e.Written {
		return fmt.Sprintf("jsonrpc: %s: no reply, request was sent and its outcome is unknown: %v", e.Method, e.Err)
	}
	return fmt.Sprintf("jsonrpc: %s: request not sent: %v", e.Method, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }
