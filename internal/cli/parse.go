package cli

import (
	"errors"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// Parse splits an ovs-vsctl command line (args excludes the program name) into global options
// and commands exactly as ovs-vsctl 3.1 does, using ovs-vsctl's command table. It only reads
// args; nothing is opened or connected. On failure the error is a *ParseError carrying
// ovs-vsctl's message and exit status, and the Invocation is nil.
func Parse(args []string) (*Invocation, error) {
	return DefaultTable().Parse(args)
}

// Parse is the package-level Parse with t's commands. It is safe for concurrent use.
//
// The rules, all observed on ovs-vsctl 3.1:
//   - Global options come first and are read as getopt_long does (see getopt.go). Reading stops
//     at the first non-option or after "--". A command option placed there (for example
//     "--may-exist add-br br0") belongs to the first command; repeating it there is no error
//     (see Command.Options for which copy counts). --help, --version, --commands and
//     --options end the reading on the spot: the rest of the line is ignored, valid or not.
//   - Some global options are checked as they are read (-t, -f, -d, -v, --syslog-method), so
//     the first bad one is reported even when the line has other errors further on.
//   - Global options after the first command are not recognised: they are arguments of that
//     command, or unknown options of the next one.
//   - The rest is split at every "--". An empty piece is skipped, unless command options from
//     the global position are still waiting for their command (then: "missing command name").
//   - A piece starts with the command's options (every word beginning with "-"), then the
//     command name, then its arguments. Options are checked in the order of ovs-vsctl's hash
//     map (see order.go), each against the command's option list.
func (t *Table) Parse(args []string) (*Invocation, error) {
	inv := &Invocation{Options: NewOptions()}
	var pending []CommandOption
	rest, perr := getopt(args, t.long, func(ev optionEvent) (bool, *ParseError) {
		if ev.opt.id == optLocal {
			// Repeats are kept: ovs-vsctl stores every copy (see Command.Options).
			pending = append(pending, CommandOption{Name: "--" + ev.opt.name, Value: ev.arg, HasValue: ev.hasArg})
			return false, nil
		}
		action, err := applyGlobal(&inv.Options, ev.opt.id, ev.arg, ev.hasArg)
		if err != nil {
			return true, err
		}
		inv.Action = action
		return action != ActionRun, nil
	})
	if perr == nil && inv.Action == ActionRun {
		inv.Commands, perr = t.parseCommands(args[rest:], pending)
	}
	if perr != nil {
		perr.Options = inv.Options
		return nil, perr
	}
	return inv, nil
}

// parseCommands splits rest at "--" and parses each piece; pending are the command options
// given among the global options.
func (t *Table) parseCommands(rest []string, pending []CommandOption) ([]Command, *ParseError) {
	var cmds []Command
	start := 0
	for i := 0; i <= len(rest); i++ {
		if i < len(rest) && rest[i] != "--" {
			continue
		}
		switch {
		case i > start:
			c, err := t.parseCommand(rest[start:i], pending)
			if err != nil {
				return nil, err
			}
			pending = nil
			cmds = append(cmds, c)
		case len(pending) > 0:
			return nil, usageError("missing command name (use --help for help)")
		}
		start = i + 1
	}
	if len(cmds) == 0 {
		return nil, usageError("missing command name (use --help for help)")
	}
	return cmds, nil
}

// parseCommand parses one non-empty piece of the command line.
func (t *Table) parseCommand(piece []string, pending []CommandOption) (Command, *ParseError) {
	opts := append([]CommandOption(nil), pending...)
	i := 0
	for ; i < len(piece) && strings.HasPrefix(piece[i], "-"); i++ {
		name, value, hasValue := strings.Cut(piece[i], "=")
		if findOption(opts, name) >= 0 {
			return Command{}, usageError("'%s' option specified multiple times", piece[i])
		}
		opts = append(opts, CommandOption{Name: name, Value: value, HasValue: hasValue})
	}
	if i == len(piece) {
		return Command{}, usageError("missing command name (use --help for help)")
	}
	name := piece[i]
	idx, ok := t.byName[name]
	if !ok {
		return Command{}, usageError("unknown command '%s'; use --help for help", name)
	}
	spec := &t.specs[idx]
	names := make([]string, len(opts))
	for k, o := range opts {
		names[k] = o.Name
	}
	order := datum.HashOrder(names)
	if err := checkOptions(spec, opts, order); err != nil {
		return Command{}, err
	}
	args := piece[i+1:]
	if len(args) < spec.MinArgs {
		return Command{}, usageError("'%s' command requires at least %d arguments", name, spec.MinArgs)
	}
	if len(args) > spec.MaxArgs {
		note := ""
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				note = " (note that options must precede command names and follow a \"--\" argument)"
				break
			}
		}
		return Command{}, usageError("'%s' command takes at most %d arguments%s", name, spec.MaxArgs, note)
	}
	return Command{Name: name, Spec: spec.clone(), Options: effectiveOptions(opts, order),
		Args: append([]string(nil), args...)}, nil
}

// checkOptions checks a command's options in ovs-vsctl's hash-map order. An option name is
// accepted when it occurs in the comma-separated option list followed by "=", "," or the end
// of the list (a substring match: "-exist" passes for "--may-exist"); it then needs a value
// exactly when that occurrence is followed by "=".
func checkOptions(spec *CommandSpec, opts []CommandOption, order []int) *ParseError {
	list := strings.Join(spec.Options, ",")
	for _, k := range order {
		o := opts[k]
		at := strings.Index(list, o.Name)
		end := at + len(o.Name)
		if at < 0 || (end < len(list) && list[end] != '=' && list[end] != ',') {
			return usageError("'%s' command has no '%s' option", spec.Name, o.Name)
		}
		needsValue := end < len(list) && list[end] == '='
		if needsValue && !o.HasValue {
			return usageError("missing argument to '%s' option on '%s' command", o.Name, spec.Name)
		}
		if !needsValue && o.HasValue {
			return usageError("'%s' option on '%s' does not accept an argument", o.Name, spec.Name)
		}
	}
	return nil
}

// effectiveOptions returns one option per name, in the order the names first appear in opts,
// each with the value ovs-vsctl's lookup finds: the copy that comes first in its hash map's
// order (order), which for an option repeated among the global options is the first of two
// copies but the last of three or more.
func effectiveOptions(opts []CommandOption, order []int) []CommandOption {
	var out []CommandOption
	for _, o := range opts {
		if findOption(out, o.Name) >= 0 {
			continue
		}
		for _, k := range order {
			if opts[k].Name == o.Name {
				out = append(out, opts[k])
				break
			}
		}
	}
	return out
}

// findOption returns the index of the option called name in opts, or -1.
func findOption(opts []CommandOption, name string) int {
	for k, o := range opts {
		if o.Name == name {
			return k
		}
	}
	return -1
}

// AsParseError returns the *ParseError in err's chain, if any.
func AsParseError(err error) (*ParseError, bool) {
	var pe *ParseError
	ok := errors.As(err, &pe)
	return pe, ok
}
