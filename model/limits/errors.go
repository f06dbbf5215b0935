package limits

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels matched with errors.Is on every *Error.
var (
	// ErrTooLarge: a bound of this package is exceeded (too long, too many).
	ErrTooLarge = errors.New("over a limit")
	// ErrBadText: bytes OVS cannot take or that would mislead a reader: NUL, invalid UTF-8,
	// control characters, invisible characters in names and keys.
	ErrBadText = errors.New("text OVS cannot take")
	// ErrBadName: a name OVS or the kernel refuses ("", ".", "..", '/', ':', white space).
	ErrBadName = errors.New("name refused")
)

// Error is one refused piece of an object. Its message names the object, the field, what is wrong
// and the fix, like
//
//	port "p1": external_ids key "owner": value is 5000 bytes, more than 4096 (limits.MaxValueBytes); shorten it or keep the data outside OVSDB
type Error struct {
	// Object names what holds the field: `port "p1"`, `bridges[0].ports[2]`.
	Object string
	// Field is the offending part: "name", `external_ids key "k"`, "interfaces".
	Field string
	// Reason says what is wrong.
	Reason string
	// Fix says what to do instead.
	Fix string
	// Kind is ErrTooLarge, ErrBadText or ErrBadName.
	Kind error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Object != "" {
		b.WriteString(e.Object)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }

// Problems collects the errors of one check and joins them, listing at most
// MaxReportedProblems and counting the rest. The zero value is ready to use.
type Problems struct {
	errs []error
	more int
}

// Add records err (nil is ignored).
func (p *Problems) Add(err error) {
	switch {
	case err == nil:
	case len(p.errs) < MaxReportedProblems:
		p.errs = append(p.errs, err)
	default:
		p.more++
	}
}

// Err returns nil when nothing was added, else the errors joined (errors.Is and errors.As see
// every listed one), followed by a count of those left out.
func (p *Problems) Err() error {
	if len(p.errs) == 0 {
		return nil
	}
	if p.more == 0 {
		return errors.Join(p.errs...)
	}
	return errors.Join(append(p.errs[:len(p.errs):len(p.errs)],
		fmt.Errorf("… and %d more problems of the same request", p.more))...)
}
