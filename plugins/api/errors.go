package api

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
)

// Code classifies an error that crosses the plugin boundary. The values are gRPC's status codes,
// so a code survives the wire unchanged.
type Code uint32

// The codes a plugin or the host uses. A plugin chooses the code that tells the host what to do:
// InvalidArgument and FailedPrecondition are reported to the user and not retried as they are;
// Unavailable and DeadlineExceeded are retried later; Internal is reported as a plugin bug.
const (
	OK                 = Code(codes.OK)
	Canceled           = Code(codes.Canceled)
	Unknown            = Code(codes.Unknown)
	InvalidArgument    = Code(codes.InvalidArgument)
	DeadlineExceeded   = Code(codes.DeadlineExceeded)
	NotFound           = Code(codes.NotFound)
	AlreadyExists      = Code(codes.AlreadyExists)
	FailedPrecondition = Code(codes.FailedPrecondition)
	Unimplemented      = Code(codes.Unimplemented)
	Internal           = Code(codes.Internal)
	Unavailable        = Code(codes.Unavailable)
)

// String returns the code's name in snake case, e.g. "invalid_argument".
func (c Code) String() string {
	switch c {
	case OK:
		return "ok"
	case Canceled:
		return "canceled"
	case InvalidArgument:
		return "invalid_argument"
	case DeadlineExceeded:
		return "deadline_exceeded"
	case NotFound:
		return "not_found"
	case AlreadyExists:
		return "already_exists"
	case FailedPrecondition:
		return "failed_precondition"
	case Unimplemented:
		return "unimplemented"
	case Internal:
		return "internal"
	case Unavailable:
		return "unavailable"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("code(%d)", uint32(c))
}

// Error is an error with a Code, the form every error takes across the plugin boundary. A
// plugin returns one to choose the code; the host receives one from every failed call.
type Error struct {
	Code    Code
	Message string
	// Problems are optional field-level details, e.g. for a rejected configuration.
	Problems []Problem
	// err is the wrapped error, when built by Errorf with %w; it does not cross the boundary.
	err error
}

// Error returns "code: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.String()
	}
	return e.Code.String() + ": " + e.Message
}

// Unwrap returns the error wrapped with %w by Errorf, if any.
func (e *Error) Unwrap() error { return e.err }

// Is reports whether target is an *Error with the same code and no message (one of the Err*
// sentinels), so errors.Is(err, api.ErrNotFound) tests the code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && len(t.Problems) == 0 && t.err == nil && t.Code == e.Code
}

// Sentinels for errors.Is: errors.Is(err, ErrNotFound) is true for every *Error with code
// NotFound. Never return them as they are: they carry no message.
var (
	ErrInvalidArgument    = &Error{Code: InvalidArgument}
	ErrNotFound           = &Error{Code: NotFound}
	ErrAlreadyExists      = &Error{Code: AlreadyExists}
	ErrFailedPrecondition = &Error{Code: FailedPrecondition}
	ErrUnavailable        = &Error{Code: Unavailable}
	ErrDeadlineExceeded   = &Error{Code: DeadlineExceeded}
	ErrUnimplemented      = &Error{Code: Unimplemented}
	ErrInternal           = &Error{Code: Internal}
)

// Errorf returns an *Error with the code and a message formatted by fmt.Errorf; an error
// wrapped with %w stays reachable through errors.Is and errors.As on this side of the boundary.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), err: errors.Unwrap(err)}
}

// CodeOf returns the code of err: OK for nil, the Code of an *Error in its chain,
// DeadlineExceeded or Canceled for the context errors, Internal for anything else.
func CodeOf(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return OK
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return Canceled
	}
	return Internal
}

// RefusedAnswerError is the error of a call the plugin answered but whose answer the host
// refused (ValidateAttachment and the package limits, see limits.go). Unlike a transport
// failure, a timeout or the plugin's own error — never a RefusedAnswerError — it means the
// plugin did its host work before answering: the caller must undo it (for Attach: Detach the
// port, passing State back). Its code is Err's (Internal: a plugin bug) and its message names
// the plugin, the object and the refused fields.
type RefusedAnswerError struct {
	// Plugin is the name of the plugin that answered.
	Plugin string
	// State is the State of the refused Attachment, for the Detach that undoes it; it may
	// exceed MaxStateSize (one reason for a refusal).
	State []byte
	// Err is the refusal: an *Error with code Internal whose Problems name the fields.
	Err error
}

// Error returns "plugin "NAME": " and the refusal.
func (e *RefusedAnswerError) Error() string { return fmt.Sprintf("plugin %q: %v", e.Plugin, e.Err) }

// Unwrap returns the refusal, so CodeOf and errors.As see its *Error.
func (e *RefusedAnswerError) Unwrap() error { return e.Err }
