// Package cliconv holds the command-line conventions every ovsplane binary follows (issue 19):
// `--help` prints the usage on standard output and exits 0; `--version` prints one line,
// "NAME (ovsplane) VERSION", and exits 0; a bad flag or argument prints the error and the usage
// on standard error and exits 2 (ExitUsage). vsctl is the one exception: as a drop-in
// ovs-vsctl it keeps ovs-vsctl's own help, version and exit statuses.
//
// A binary parses its flags with output discarded and hands the result to Parsed, which
// applies the conventions, so the flag package never prints on its own.
package cliconv

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/ovsplane/ovsplane/model"
)

// ExitUsage is the exit status of a usage error: an unknown or malformed flag, a missing or
// extra argument.
const ExitUsage = 2

// VersionFlagUsage is the help text of every binary's --version flag.
const VersionFlagUsage = "print the version and exit"

// PrintVersion writes name's version line, "NAME (ovsplane) VERSION", to w. Every binary of
// this repository is built from one tree, so they share model.Version.
func PrintVersion(w io.Writer, name string) {
	fmt.Fprintf(w, "%s (ovsplane) %s\n", name, model.Version)
}

// Parsed applies the conventions to err, the result of a flag set's Parse (flag or pflag)
// whose output was discarded. It returns done=false when err is nil: the binary carries on.
// Otherwise it prints what the conventions say and returns the exit status: for a help request
// (flag.ErrHelp or pflag.ErrHelp) usage(stdout) and 0; for any other error "NAME: ERROR" and
// usage(stderr), and ExitUsage.
func Parsed(name string, err error, stdout, stderr io.Writer, usage func(io.Writer)) (code int, done bool) {
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp) || errors.Is(err, pflag.ErrHelp):
		usage(stdout)
		return 0, true
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		usage(stderr)
		return ExitUsage, true
	}
}
