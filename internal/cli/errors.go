package cli

import "fmt"

// ExitUsage is the exit status ovs-vsctl uses for every command-line error.
const ExitUsage = 1

// ParseError is a command line that ovs-vsctl 3.1 rejects. Msg is exactly the text ovs-vsctl
// prints on stderr after its "<program>: " prefix (without the trailing newline) and Status is
// its exit status.
//
// Getopt tells who prints the message: true for errors reported by the C library's option
// parser (unknown or ambiguous option, missing or unexpected option argument), which prefix the
// message with argv[0] exactly as invoked ("/usr/bin/ovs-vsctl: ..."), false for ovs-vsctl's
// own errors, which use the program's base name ("ovs-vsctl: ..."). Line builds the full line.
//
// Options holds the global options processed before the failing one. ovs-vsctl acts on some
// options as soon as it reads them; in particular it opens the --log-file and exits with status
// 1 if that fails, before it ever sees a later bad option. A caller that mimics this looks at
// Options.LogFile first.
type ParseError struct {
	Msg     string
	Status  int
	Getopt  bool
	Options Options
}

// Error returns Msg.
func (e *ParseError) Error() string { return e.Msg }

// Line returns the complete stderr line ovs-vsctl prints for this error, including the
// trailing newline: argv0 is the program as invoked (os.Args[0]) and program its base name.
func (e *ParseError) Line(argv0, program string) string {
	if e.Getopt {
		return argv0 + ": " + e.Msg + "\n"
	}
	return program + ": " + e.Msg + "\n"
}

// usageError returns a ParseError carrying ovs-vsctl's own message.
func usageError(format string, args ...any) *ParseError {
	return &ParseError{Msg: fmt.Sprintf(format, args...), Status: ExitUsage}
}

// getoptError returns a ParseError carrying the C option parser's message.
func getoptError(format string, args ...any) *ParseError {
	return &ParseError{Msg: fmt.Sprintf(format, args...), Status: ExitUsage, Getopt: true}
}
