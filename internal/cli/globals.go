package cli

import (
	"math"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// argKind says whether a long option takes an argument, as in getopt_long's has_arg.
type argKind int

const (
	noArg argKind = iota
	requiredArg
	optionalArg
)

// optID identifies what an option does. All command options share optLocal, which matters to
// getopt's ambiguity rule (see matchLong).
type optID int

const (
	optLocal optID = iota
	optDB
	optNoSyslog
	optNoWait
	optDryRun
	optOneline
	optTimeout
	optRetry
	optHelp
	optCommands
	optOptions
	optLeaderOnly
	optNoLeaderOnly
	optShuffleRemotes
	optNoShuffleRemotes
	optVersion
	optVerbose
	optLogFile
	optSyslogMethod
	optSyslogTarget
	optFormat
	optData
	optNoHeadings
	optPretty
	optBare
	optMaxColumnWidth
	optPrivateKey
	optCertificate
	optCACert
	optSSLProtocols
	optSSLCiphers
	optBootstrapCACert
	optPeerCACert
)

// longOption is one entry of getopt's long option array; short is its one-letter alias or 0.
type longOption struct {
	name  string
	kind  argKind
	id    optID
	short byte
}

// globalLongOptions returns ovs-vsctl 3.1's global options in the order of its option array
// (observed from the "possibilities" getopt lists for an ambiguous abbreviation).
func globalLongOptions() []longOption {
	return []longOption{
		{"db", requiredArg, optDB, 0},
		{"no-syslog", noArg, optNoSyslog, 0},
		{"no-wait", noArg, optNoWait, 0},
		{"dry-run", noArg, optDryRun, 0},
		{"oneline", noArg, optOneline, 0},
		{"timeout", requiredArg, optTimeout, 't'},
		{"retry", noArg, optRetry, 0},
		{"help", noArg, optHelp, 'h'},
		{"commands", noArg, optCommands, 0},
		{"options", noArg, optOptions, 0},
		{"leader-only", noArg, optLeaderOnly, 0},
		{"no-leader-only", noArg, optNoLeaderOnly, 0},
		{"shuffle-remotes", noArg, optShuffleRemotes, 0},
		{"no-shuffle-remotes", noArg, optNoShuffleRemotes, 0},
		{"version", noArg, optVersion, 'V'},
		{"verbose", optionalArg, optVerbose, 'v'},
		{"log-file", optionalArg, optLogFile, 0},
		{"syslog-method", requiredArg, optSyslogMethod, 0},
		{"syslog-target", requiredArg, optSyslogTarget, 0},
		{"format", requiredArg, optFormat, 'f'},
		{"data", requiredArg, optData, 'd'},
		{"no-headings", noArg, optNoHeadings, 0},
		{"pretty", noArg, optPretty, 0},
		{"bare", noArg, optBare, 0},
		{"max-column-width", requiredArg, optMaxColumnWidth, 0},
		{"private-key", requiredArg, optPrivateKey, 'p'},
		{"certificate", requiredArg, optCertificate, 'c'},
		{"ca-cert", requiredArg, optCACert, 'C'},
		{"ssl-protocols", requiredArg, optSSLProtocols, 0},
		{"ssl-ciphers", requiredArg, optSSLCiphers, 0},
		{"bootstrap-ca-cert", requiredArg, optBootstrapCACert, 0},
		{"peer-ca-cert", requiredArg, optPeerCACert, 0},
	}
}

// OptionsListing returns exactly what ovs-vsctl 3.1 prints for --options: each global long
// option ("--name" or "--name=ARG"), followed by its short alias ("-x" or "-x ARG") if any.
func OptionsListing() string {
	var b strings.Builder
	for _, o := range globalLongOptions() {
		arg := ""
		if o.kind != noArg {
			arg = "ARG"
		}
		b.WriteString("--" + o.name)
		if arg != "" {
			b.WriteString("=" + arg)
		}
		b.WriteString("\n")
		if o.short != 0 {
			b.WriteString("-" + string(o.short))
			if arg != "" {
				b.WriteString(" " + arg)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// applyGlobal acts on one global option the way ovs-vsctl does while it reads the command
// line. It returns the action the option requests (ActionRun to carry on) or an error.
func applyGlobal(o *Options, id optID, arg string, hasArg bool) (Action, *ParseError) {
	switch id {
	case optHelp:
		return ActionHelp, nil
	case optVersion:
		return ActionVersion, nil
	case optCommands:
		return ActionListCommands, nil
	case optOptions:
		return ActionListOptions, nil
	case optTimeout:
		v, ok := parseTimeout(arg)
		if !ok {
			return ActionRun, usageError("value %s on -t or --timeout is invalid", arg)
		}
		o.Timeout = v
	case optVerbose:
		if hasArg {
			if msg := vlogSpecError(arg); msg != "" {
				return ActionRun, usageError("processing \"%s\": %s", arg, msg)
			}
		}
		o.Verbose = append(o.Verbose, arg)
	case optSyslogMethod:
		if !validSyslogMethod(arg) {
			return ActionRun, usageError("unsupported syslog method '%s'", arg)
		}
		o.SyslogMethod = arg
	case optFormat:
		switch arg {
		case "table", "list", "html", "csv", "json":
			o.Format = arg
		default:
			return ActionRun, usageError("unknown output format \"%s\"", arg)
		}
	case optData:
		switch arg {
		case "string", "bare", "json":
			o.Data = arg
		default:
			return ActionRun, usageError("unknown data format \"%s\"", arg)
		}
	case optBare:
		o.Format, o.Data, o.NoHeadings = "list", "bare", true
	case optMaxColumnWidth:
		o.MaxColumnWidth, o.HasMaxColumnWidth = atoi(arg), true
	default:
		applyPlain(o, id, arg)
	}
	return ActionRun, nil
}

// applyPlain records the options ovs-vsctl stores without checking.
func applyPlain(o *Options, id optID, arg string) {
	switch id {
	case optDB:
		o.DB, o.HasDB = arg, true
	case optNoSyslog:
		o.NoSyslog = true
	case optNoWait:
		o.NoWait = true
	case optDryRun:
		o.DryRun = true
	case optOneline:
		o.Oneline = true
	case optRetry:
		o.Retry = true
	case optLeaderOnly:
		o.LeaderOnly = true
	case optNoLeaderOnly:
		o.LeaderOnly = false
	case optShuffleRemotes:
		o.ShuffleRemotes = true
	case optNoShuffleRemotes:
		o.ShuffleRemotes = false
	case optLogFile:
		o.LogFile, o.HasLogFile = arg, true
	case optSyslogTarget:
		o.SyslogTarget = arg
	case optNoHeadings:
		o.NoHeadings = true
	case optPretty:
		o.Pretty = true
	case optPrivateKey:
		o.PrivateKey = arg
	case optCertificate:
		o.Certificate = arg
	case optCACert:
		o.CACert = arg
	case optSSLProtocols:
		o.SSLProtocols = arg
	case optSSLCiphers:
		o.SSLCiphers = arg
	case optBootstrapCACert:
		o.BootstrapCACert = arg
	case optPeerCACert:
		o.PeerCACert = arg
	}
}

// parseTimeout converts a -t/--timeout value: a decimal number of seconds from 1 to
// 4294967295, as C's strtoll reads it (leading white space and a sign allowed, nothing after).
func parseTimeout(s string) (uint32, bool) {
	v, ok := datum.ParseCLong(s)
	if !ok || v < 1 || v > math.MaxUint32 {
		return 0, false
	}
	return uint32(v), true
}

// atoi converts s as glibc's atoi does: (int) strtol(s, NULL, 10), garbage after the number
// ignored, 0 when there is no number.
func atoi(s string) int {
	v, _, _ := datum.ScanCLong(s)
	return int(int32(v))
}
