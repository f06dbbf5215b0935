package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// The bounds of a Command, checked by Command.Validate: a program's argv and environment are
// typed lists, each element bounded, never a shell string.
const (
	MaxProcessArgs      = 256      // arguments after the program
	MaxProcessArgBytes  = 4096     // bytes of one argument, environment entry, path or directory
	MaxProcessArgvBytes = 64 << 10 // bytes of all arguments and environment entries together
	MaxProcessEnv       = 64       // environment entries
	MaxProcessNameBytes = 128      // bytes of a process (job) name
)

// DefaultProcessEnv is the only entry of the environment of a Command whose Env is nil: a PATH
// and nothing of the plugin's own environment (which carries the host's handshake variables).
const DefaultProcessEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Command is a program to run: exec'd directly from its absolute path with a typed argument
// list, never through a shell, so no argument is ever parsed or split.
type Command struct {
	// Path is the program's absolute path; it is also argv[0].
	Path string
	// Args are the arguments after argv[0], each passed as is.
	Args []string
	// Env is the environment ("KEY=value" entries); nil means only DefaultProcessEnv.
	Env []string
	// Dir is the working directory; "" means "/".
	Dir string
}

// Argv returns the program's whole argument vector: Path, then Args.
func (c Command) Argv() []string { return append([]string{c.Path}, c.Args...) }

// Equal reports whether c and o run the same program the same way.
func (c Command) Equal(o Command) bool {
	return c.Path == o.Path && slices.Equal(c.Args, o.Args) && slices.Equal(c.Env, o.Env) &&
		(c.Env == nil) == (o.Env == nil) && c.Dir == o.Dir
}

// String quotes the argument vector for humans (logs, statuses); it is never run by a shell.
func (c Command) String() string {
	var b strings.Builder
	for i, a := range c.Argv() {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && !strings.ContainsFunc(a, func(r rune) bool { return r <= ' ' || r == '"' || r == '\'' || r == '\\' || r > '~' }) {
			b.WriteString(a)
		} else {
			fmt.Fprintf(&b, "%q", a)
		}
	}
	return b.String()
}

// Validate checks c without touching the file system: an absolute, clean Path; at most
// MaxProcessArgs arguments and MaxProcessEnv environment entries; no element with a NUL byte,
// invalid UTF-8 or more than MaxProcessArgBytes bytes; at most MaxProcessArgvBytes in all; every
// environment entry KEY=value with a non-empty KEY; an absolute Dir. It returns nil or an
// *api.Error with code InvalidArgument whose Problems name each bad element ("args[2]").
func (c Command) Validate() error {
	var ps []api.Problem
	bad := func(field, format string, args ...any) {
		ps = append(ps, api.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	text := func(field, s string) bool {
		switch {
		case strings.IndexByte(s, 0) >= 0:
			bad(field, "contains a NUL byte; an argument cannot carry one")
		case len(s) > MaxProcessArgBytes:
			bad(field, "%d bytes, more than %d (sdk.MaxProcessArgBytes)", len(s), MaxProcessArgBytes)
		case !utf8.ValidString(s):
			bad(field, "is not valid UTF-8")
		default:
			return true
		}
		return false
	}
	if text("path", c.Path) {
		switch {
		case !filepath.IsAbs(c.Path):
			bad("path", "%q must be an absolute path (no PATH lookup, no shell)", c.Path)
		case filepath.Clean(c.Path) != c.Path:
			bad("path", "%q must be clean (%q)", c.Path, filepath.Clean(c.Path))
		}
	}
	if c.Dir != "" && text("dir", c.Dir) && !filepath.IsAbs(c.Dir) {
		bad("dir", "%q must be an absolute path", c.Dir)
	}
	if len(c.Args) > MaxProcessArgs {
		bad("args", "%d arguments, more than %d (sdk.MaxProcessArgs)", len(c.Args), MaxProcessArgs)
		return processInvalid(ps)
	}
	if len(c.Env) > MaxProcessEnv {
		bad("env", "%d entries, more than %d (sdk.MaxProcessEnv)", len(c.Env), MaxProcessEnv)
		return processInvalid(ps)
	}
	total := len(c.Path)
	for i, a := range c.Args {
		text(fmt.Sprintf("args[%d]", i), a)
		total += len(a)
	}
	for i, e := range c.Env {
		f := fmt.Sprintf("env[%d]", i)
		if text(f, e) {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				bad(f, "%q is not KEY=value", e)
			}
		}
		total += len(e)
	}
	if total > MaxProcessArgvBytes {
		bad("args", "%d bytes of arguments and environment, more than %d (sdk.MaxProcessArgvBytes)", total, MaxProcessArgvBytes)
	}
	if len(ps) > 0 {
		return processInvalid(ps)
	}
	return nil
}

// CheckProgram checks that path names an executable regular file (following symbolic links),
// as a Process needs, and returns an *api.Error with code FailedPrecondition saying what is
// wrong with it otherwise. It is a check for a clear early error, not a guarantee: the file
// may change before it runs.
func CheckProgram(path string) error {
	if !filepath.IsAbs(path) {
		return api.Errorf(api.FailedPrecondition, "program %q: not an absolute path", path)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return api.Errorf(api.FailedPrecondition, "program %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return api.Errorf(api.FailedPrecondition, "program %s: not a regular file (%s)", path, fi.Mode().Type())
	case fi.Mode().Perm()&0o111 == 0:
		return api.Errorf(api.FailedPrecondition, "program %s: not executable (mode %s)", path, fi.Mode().Perm())
	}
	return nil
}

// checkName checks a process name: printable text of 1 to MaxProcessNameBytes bytes.
func checkName(name string) error {
	if name == "" || len(name) > MaxProcessNameBytes || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f || r == utf8.RuneError }) {
		return processInvalid([]api.Problem{{Field: "name", Message: fmt.Sprintf("%q: want 1 to %d printable bytes without spaces", name, MaxProcessNameBytes)}})
	}
	return nil
}

// processInvalid is the InvalidArgument *api.Error of a command's problems, its message listing
// them. (This file set depends on package api and the standard library only.)
func processInvalid(ps []api.Problem) error {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.String()
	}
	return &api.Error{Code: api.InvalidArgument, Message: "command: " + strings.Join(msgs, "; "), Problems: ps}
}
