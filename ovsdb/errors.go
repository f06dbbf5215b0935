package ovsdb

import (
	"errors"
	"fmt"
	"github.com/ovsplane/ovsplane/model"
	"io"
	"net"
	"regexp"
	"strings"
	"syscall"

	"github.com/cenkalti/rpc2"
	"github.com/ovn-kubernetes/libovsdb/client"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// Sentinel errors for decisions. Every error returned by this package that falls in one of these
// classes matches it with errors.Is; most are wrapped in an *OpError or *ApplyError naming the
// object concerned.
var (
	// ErrConstraintViolation: the transaction would break a schema constraint (duplicate name in
	// an indexed column, value out of range, too many elements in a set).
	ErrConstraintViolation = errors.New("constraint violation")
	// ErrReferentialIntegrity: the transaction would leave a reference to a deleted row, or
	// delete a row that something still refers to.
	ErrReferentialIntegrity = errors.New("referential integrity violation")
	// ErrTimeout: a deadline ran out, either an OVSDB "wait" operation or waiting for
	// ovs-vswitchd to apply a configuration.
	ErrTimeout = errors.New("timed out")
	// ErrNotConnected: the client has no connection to an OVSDB server.
	ErrNotConnected = errors.New("not connected to OVSDB")
	// ErrNotOwned: the operation would modify or delete a row that this client's owner did not
	// create (it has no matching ownership tag in external_ids). Such rows are never touched.
	ErrNotOwned = errors.New("not owned by this client")
	// ErrNotFound: a row the operation depends on (such as the bridge of a port) does not exist.
	// It is model.ErrNotFound, the one "not found" of every layer.
	ErrNotFound = model.ErrNotFound
	// ErrConflict: a concurrent writer kept changing the rows this transaction depends on, and
	// the retries ran out. It is not model.ErrConflict on purpose: that one means the request
	// contradicts existing state (the API answers FailedPrecondition: do not retry as is),
	// while this one is contention that a later attempt may pass.
	ErrConflict = errors.New("concurrent modification")
	// ErrVswitchd: ovs-vswitchd applied the configuration but reported an error for at least one
	// interface (Interface.error).
	ErrVswitchd = errors.New("ovs-vswitchd reported an error")
	// ErrInvalid: the caller's spec is invalid; nothing was sent to the database. It is
	// model.ErrInvalid, the one "invalid argument" of every layer.
	ErrInvalid = model.ErrInvalid
)

// OpError is a failed OVSDB operation, translated into the object it concerned. Table and Row
// name the row (Row is the row's name, or its UUID when it has no name); Column is filled when the
// server's message names one.
type OpError struct {
	Kind    error  // one of the sentinel errors above
	Table   string // OVSDB table, e.g. "Interface"
	Row     string // row name (or UUID)
	Column  string // column named by the server, if any
	Details string // the server's own words
}

// Error implements error.
func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	if e.Table != "" {
		fmt.Fprintf(&b, " on %s", e.Table)
		if e.Row != "" {
			fmt.Fprintf(&b, " %q", e.Row)
		}
	}
	if e.Column != "" {
		fmt.Fprintf(&b, " column %s", e.Column)
	}
	if e.Details != "" {
		fmt.Fprintf(&b, ": %s", e.Details)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrConstraintViolation) and friends work.
func (e *OpError) Unwrap() error { return e.Kind }

// InterfaceError is the error ovs-vswitchd recorded in Interface.error for one interface.
type InterfaceError struct {
	Interface string
	Message   string
}

// Error implements error.
func (e *InterfaceError) Error() string {
	return fmt.Sprintf("interface %q: ovs-vswitchd: %s", e.Interface, e.Message)
}

// Unwrap makes errors.Is(err, ErrVswitchd) true.
func (e *InterfaceError) Unwrap() error { return ErrVswitchd }

// ApplyError is returned by a commit that reached the database and was applied by ovs-vswitchd,
// but where ovs-vswitchd reported errors for some interfaces. The transaction itself is not undone:
// the rows stay, as with ovs-vsctl.
type ApplyError struct {
	Interfaces []InterfaceError
}

// Error implements error.
func (e *ApplyError) Error() string {
	parts := make([]string, len(e.Interfaces))
	for i := range e.Interfaces {
		parts[i] = e.Interfaces[i].Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap exposes each interface's error to errors.Is / errors.As.
func (e *ApplyError) Unwrap() []error {
	errs := make([]error, len(e.Interfaces))
	for i := range e.Interfaces {
		errs[i] = &e.Interfaces[i]
	}
	return errs
}

var columnInDetails = regexp.MustCompile(`column "?([A-Za-z_]+)"?`)

// objRef names the object an operation was built for, so a server error can be reported in the
// caller's terms.
type objRef struct {
	table string
	name  string
}

// translateResults turns OVSDB operation results into a typed error, or nil when every operation
// succeeded. refs[i] names the object behind ops[i].
func translateResults(results []libovsdb.OperationResult, ops []libovsdb.Operation, refs []objRef) error {
	for i, r := range results {
		if r.Error == "" {
			continue
		}
		ref := objRef{}
		if i < len(refs) {
			ref = refs[i]
		} else if i >= len(ops) {
			// Commit-time error (index or reference check): find the object from the details.
			ref = refFromDetails(r.Details, ops, refs)
		}
		e := &OpError{Kind: kindOf(r.Error), Table: ref.table, Row: ref.name, Details: r.Details}
		if i < len(ops) && ops[i].Op == libovsdb.OperationWait && r.Error == "timed out" {
			// One of our guards: the row changed after we read it.
			e.Kind = ErrConflict
			e.Details = "changed by another writer since it was read"
			return e
		}
		if e.Kind == nil {
			e.Kind = fmt.Errorf("ovsdb %s", r.Error)
		}
		if m := columnInDetails.FindStringSubmatch(r.Details); m != nil {
			e.Column = m[1]
		}
		return e
	}
	if len(results) < len(ops) {
		return fmt.Errorf("ovsdb: %d operations sent but %d results received", len(ops), len(results))
	}
	return nil
}

func kindOf(ovsdbErr string) error {
	switch ovsdbErr {
	case "constraint violation":
		return ErrConstraintViolation
	case "referential integrity violation":
		return ErrReferentialIntegrity
	case "timed out":
		return ErrTimeout
	case "not connected":
		return ErrNotConnected
	}
	return nil
}

// refFromDetails picks the object whose row UUID, or table and name, the server's message
// mentions.
func refFromDetails(details string, ops []libovsdb.Operation, refs []objRef) objRef {
	for i, op := range ops {
		if i >= len(refs) || len(op.Where) == 0 || op.Where[0].Column != "_uuid" {
			continue
		}
		if u, ok := op.Where[0].Value.(libovsdb.UUID); ok && strings.Contains(details, u.GoUUID) {
			return refs[i]
		}
	}
	var best objRef
	for _, r := range refs {
		if r.table == "" || !strings.Contains(details, r.table) {
			continue
		}
		if best.table == "" {
			best = objRef{table: r.table}
		}
		if r.name != "" && strings.Contains(details, r.name) {
			return r
		}
	}
	return best
}

// translateTransportErr maps libovsdb's and the socket's transport errors to ErrNotConnected:
// a connection the server dropped (restart, failover) can still look connected until libovsdb
// notices, and the first write on it fails with EPIPE, ECONNRESET or EOF.
func translateTransportErr(err error) error {
	var opErr *net.OpError
	switch {
	case errors.Is(err, ErrNotConnected):
		return err
	case errors.Is(err, client.ErrNotConnected), errors.Is(err, rpc2.ErrShutdown),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.As(err, &opErr):
		return fmt.Errorf("%w: %w", ErrNotConnected, err)
	}
	return err
}
