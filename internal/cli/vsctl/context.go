package vsctl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// Handler implements one command. Pre runs before the program connects to the database
// (checking what can be checked from the schema alone, as ovs-vsctl's prerequisites do), Run
// runs inside the transaction, and Post runs after a successful (or unchanged) commit, with
// Context.Result set. Any of them may be nil.
type Handler struct {
	Pre  func(*Context) error
	Run  func(*Context) error
	Post func(*Context) error
}

// Context is what a command sees while it runs. One Context exists per command; State, DB,
// Symbols and OVS are shared by all commands of the invocation (and rebuilt when the
// invocation is retried).
type Context struct {
	// Ctx bounds every database round trip.
	Ctx context.Context
	// Cmd is the command being run; Opts the invocation's global options.
	Cmd  *cli.Command
	Opts *cli.Options
	// Schema is the schema tables and columns are resolved against (also available before
	// connecting, in Pre).
	Schema *dbcmd.Schema
	// DB is the invocation's view of the database (nil in Pre).
	DB *dbcmd.DB
	// OVS is the Open_vSwitch row (inserted by the invocation when the table is empty).
	OVS *dbcmd.Row
	// Symbols holds the @name row references of the invocation.
	Symbols *Symbols
	// Out collects the command's text output; Table, when set, is printed instead of Out
	// using the --format options.
	Out   strings.Builder
	Table *cli.OutputTable
	// Last is true for the last command of the invocation.
	Last bool
	// Result is the outcome of the commit (only in Post).
	Result *dbcmd.Result
	// State is per-invocation state shared by the commands (vswitch cache, interfaces to
	// check after ovs-vswitchd reloads).
	State *State

	log *logger
}

// Logf logs a message as ovs-vsctl's VLOG does: numbered, and printed on stderr when the
// console's level for module (warn unless -v says otherwise) lets level (EMER, ERR, WARN, INFO,
// DBG) through.
func (c *Context) Logf(module, level, format string, args ...any) {
	if c.log == nil {
		return
	}
	c.log.printf(module, level, format, args...)
}

// State is the per-invocation state shared by all commands of one attempt.
type State struct {
	// ExpectIfaces are the (temporary) UUIDs of interfaces inserted by add-br, add-port and
	// add-bond, whose setup ovs-vswitchd's result is checked after it reloads.
	ExpectIfaces []string
	// vs is the bridge/port/interface cache of the vswitch commands, built on first use.
	vs *vsCache
}

// Error is a fatal error: the program prints "PROG: Msg" on stderr and exits with status 1.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Fatalf returns an *Error with a formatted message (ovs-vsctl's ctl_fatal).
func Fatalf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// ExitError ends the program with Code and no message (br-exists' status 2).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ErrTryAgain asks for the whole command list to run again once the database has changed
// (wait-until's condition not met yet).
var ErrTryAgain = errors.New("try again")

// Printf appends to the command's output.
func (c *Context) Printf(format string, args ...any) { fmt.Fprintf(&c.Out, format, args...) }
