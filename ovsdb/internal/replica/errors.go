package replica

import (
	"fmt"
	"strconv"
)

// sentinel is the type of the package's sentinel errors; being a string type, they are
// constants.
type sentinel string

func (e sentinel) Error() string { return string(e) }

const (
	// ErrTooLarge is matched (errors.Is) by every [*LimitError]: the input crossed one of the
	// store's bounds ([Limits]).
	ErrTooLarge = sentinel("replica: input exceeds a limit")
	// ErrMalformed is matched by errors for input that is not a well-formed table-updates
	// object for the monitored schema: bad JSON grammar for a datum, a value of the wrong type,
	// a bad uuid, an enum value outside the schema, a member twice.
	ErrMalformed = sentinel("replica: malformed table-updates")
	// ErrInconsistent is matched by errors for updates that do not fit the store's state: a
	// modify or delete of a uuid the store does not hold, an insert of one it does, a change
	// of an immutable column. The caller's remedy is to drop the connection and refill.
	ErrInconsistent = sentinel("replica: update inconsistent with the replica")
)

// LimitError reports an input that crossed one of the store's bounds. It matches
// [ErrTooLarge] with errors.Is. Table, Column and Row locate the offending object as far as it
// was known when the bound was crossed (Row is the row's uuid).
type LimitError struct {
	What   string // the bound: "atom bytes", "set elements", "map pairs", "rows", "nesting depth"
	Table  string
	Column string
	Row    string
	Limit  int
}

func (e *LimitError) Error() string {
	where := ""
	if e.Table != "" {
		where = e.Table
		if e.Row != "" {
			where += " row " + e.Row
		}
		where += ": "
	}
	if e.Column != "" {
		where += "column " + e.Column + ": "
	}
	return fmt.Sprintf("replica: %s%s exceeds the limit of %s", where, e.What, strconv.Itoa(e.Limit))
}

// Is reports whether target is ErrTooLarge.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }
