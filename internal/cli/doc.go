// Package cli is the command-line layer of vsctl, the drop-in ovs-vsctl: it turns an
// ovs-vsctl command line into global options and a list of commands, and rejects bad command
// lines with the very message and exit status ovs-vsctl 3.1 uses. It also renders what
// commands print and emulates ovs-vsctl's console log, so that every byte vsctl writes that does
// not depend on the database is decided here. It does no I/O of its own: callers pass it
// strings and receive strings. Executing the commands and talking to OVSDB live in
// internal/cli/vsctl and ovsdb/dbcmd; OVSDB values (atoms, datums, column types, their
// ovs-vsctl syntax) live in ovsdb/datum, which this package uses and does not re-export.
//
// The package holds:
//
//   - Parse, Table and VSwitchCommands: the command line, global options (getopt.go,
//     globals.go) and the command table (commands.go, table.go, parse.go);
//   - Usage, Table.CommandsListing and OptionsListing: --help, --commands and --options
//     (usage.go);
//   - OutputTable and TableWriter: the table formatter of list and find, with --format
//     (list, table, html, csv, json), --data, --columns, --no-headings, --pretty and
//     --max-column-width (output.go);
//   - ConsoleLog: what -v/--verbose leave of OVS's console log, and the check of -v specs
//     (vlog.go, vlog_console.go);
//   - ParseError and the exit statuses (errors.go).
//
// # Parsing
//
//	inv, err := cli.Parse(os.Args[1:])
//	if pe, ok := cli.AsParseError(err); ok {
//		fmt.Fprint(os.Stderr, pe.Line(os.Args[0], filepath.Base(os.Args[0])))
//		os.Exit(pe.Status)
//	}
//	for _, c := range inv.Commands { ... c.Name, c.Has("--may-exist"), c.Args ... }
//
// An ovs-vsctl command line is global options, then commands separated by "--", each command
// being its own options (--may-exist, --if-exists, --id=@x, ...), its name and its
// arguments:
//
//	ovs-vsctl --timeout=5 --may-exist add-br br0 -- --id=@p get Port p0 -- set Bridge br0 ...
//
// Global options are read as glibc's getopt_long reads them (abbreviations, clustered short
// options, "--opt value" and "--opt=value"), command options are matched as ovs-vsctl matches
// them, and every command is checked against its table entry (name, options, number of
// arguments). The finer points, each observed on the 3.1 binary, are documented on
// Table.Parse; the surprising ones are:
//
//   - command options are matched by substring, so "-exist" is accepted for add-br yet has no
//     effect (look options up with Command.Has, by exact name);
//   - when a command has several bad options, the one reported is the first in the iteration
//     order of ovs-vsctl's hash map, which ovsdb/datum models (datum.HashOrder);
//   - "-t 0" is rejected although the manual says 0 means "wait forever";
//   - an empty command between two "--" is silently skipped;
//   - set-controller accepts a single argument although its syntax says "!BRIDGE +TARGET";
//   - a command option repeated before the first command is no error, and which copy counts
//     again depends on the hash map: the first of two, the last of three or more;
//   - OVS_CTL_TIMEOUT supplies the timeout when -t is absent (Options.EffectiveTimeout).
//
// # Command table and help
//
// VSwitchCommands is ovs-vsctl 3.1's command table as data (name, options, syntax, argument
// bounds). NewTable builds a parser for any table, so commands for ovsplane's own objects can
// be added to it. Table.CommandsListing, OptionsListing and Usage reproduce the output of
// --commands, --options and --help.
//
// # Compatibility testing
//
// The tests run hundreds of command lines through Parse and through the real
// /usr/bin/ovs-vsctl (pointed at a database socket that does not exist, so nothing can
// change) and require the same message and exit status for every rejected line; FuzzParse
// checks that no input panics and that every error has a message.
package cli
