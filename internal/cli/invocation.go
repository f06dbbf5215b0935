package cli

// Action is what an invocation asks the program to do.
type Action int

const (
	// ActionRun executes Invocation.Commands.
	ActionRun Action = iota
	// ActionHelp prints Usage and exits 0 (-h, --help).
	ActionHelp
	// ActionVersion prints the version and exits 0 (-V, --version).
	ActionVersion
	// ActionListCommands prints Table.CommandsListing and exits 0 (--commands).
	ActionListCommands
	// ActionListOptions prints OptionsListing and exits 0 (--options).
	ActionListOptions
)

// String returns the option that requests the action, or "run".
func (a Action) String() string {
	switch a {
	case ActionHelp:
		return "--help"
	case ActionVersion:
		return "--version"
	case ActionListCommands:
		return "--commands"
	case ActionListOptions:
		return "--options"
	default:
		return "run"
	}
}

// Invocation is a parsed ovs-vsctl command line.
//
// For ActionRun, Commands holds at least one command. For the other actions ovs-vsctl stops
// reading the command line at the option that requested them, so Options holds only the
// options before it and Commands is empty.
type Invocation struct {
	Action   Action
	Options  Options
	Commands []Command
}

// Options are the global options, after ovs-vsctl's processing: later options override
// earlier ones (--bare sets Format, Data and NoHeadings at the point where it appears).
// Zero values mean "not given" except where noted; NewOptions returns the defaults.
type Options struct {
	// DB is the --db argument; HasDB is false when --db was not given (use the default,
	// unix:$OVS_RUNDIR/db.sock). ovs-vsctl does not check the value until it connects.
	DB    string
	HasDB bool

	NoWait  bool // --no-wait
	DryRun  bool // --dry-run
	Oneline bool // --oneline
	Retry   bool // --retry

	// Timeout is the -t/--timeout value in seconds, 1..4294967295; 0 when not given (see
	// EffectiveTimeout for the limit ovs-vsctl then applies).
	Timeout uint32

	// LeaderOnly and ShuffleRemotes default to true (--no-leader-only, --no-shuffle-remotes).
	LeaderOnly     bool
	ShuffleRemotes bool

	// Verbose lists the -v/--verbose arguments in order; "" for a bare -v. Every entry has
	// been validated the way ovs-vsctl does (destinations, levels, modules, PATTERN:,
	// FACILITY:).
	Verbose  []string
	NoSyslog bool // --no-syslog: the same as --verbose=vsctl:syslog:warn

	// LogFile is the --log-file argument ("" with HasLogFile for the default file). ovs-vsctl
	// opens it while reading the options and exits with status 1 if that fails.
	LogFile      string
	HasLogFile   bool
	SyslogMethod string // --syslog-method, validated (libc, null, unix:..., udp:...)
	SyslogTarget string // --syslog-target, not validated (ovs-vsctl only logs a bad one)

	// Format is the table format (-f): "list" (default), "table", "html", "csv" or "json".
	Format string
	// Data is the cell format (-d): "string" (default), "bare" or "json".
	Data       string
	NoHeadings bool // --no-headings
	Pretty     bool // --pretty
	// MaxColumnWidth is --max-column-width converted as C's atoi does (no validation).
	MaxColumnWidth    int
	HasMaxColumnWidth bool

	// SSL options, recorded unchecked (ovs-vsctl reads the files when it connects).
	PrivateKey      string // -p, --private-key
	Certificate     string // -c, --certificate
	CACert          string // -C, --ca-cert
	BootstrapCACert string // --bootstrap-ca-cert
	PeerCACert      string // --peer-ca-cert
	SSLProtocols    string // --ssl-protocols
	SSLCiphers      string // --ssl-ciphers
}

// EffectiveTimeout returns the run-time limit in seconds that ovs-vsctl applies: Timeout when
// -t/--timeout was given, else ctlTimeoutEnv (the value of the OVS_CTL_TIMEOUT environment
// variable, "" when unset) if it is valid by -t's rules (an invalid value is silently
// ignored), else 0, meaning no limit.
func (o *Options) EffectiveTimeout(ctlTimeoutEnv string) uint32 {
	if o.Timeout != 0 {
		return o.Timeout
	}
	if v, ok := parseTimeout(ctlTimeoutEnv); ok {
		return v
	}
	return 0
}

// NewOptions returns the global options in effect when none are given.
func NewOptions() Options {
	return Options{LeaderOnly: true, ShuffleRemotes: true, Format: "list", Data: "string"}
}

// Command is one command of an invocation: the text between two "--" separators.
type Command struct {
	// Name is the command name as typed; Spec is its table entry.
	Name string
	Spec CommandSpec
	// Options are the command's options, one per name, in the order given. Options placed
	// among the global options (before the first command) come first; they belong to the
	// first command. Repeating an option there is not an error: ovs-vsctl keeps every copy
	// and later uses the one its hash map yields first, which is the first of two copies but
	// the last of three or more (--columns=a --columns=b uses a; with a third, the third).
	// Options holds, for each name, that copy.
	Options []CommandOption
	// Args are the arguments after the command name.
	Args []string
}

// CommandOption is one command option such as --may-exist or --id=@p.
//
// Name is the text before the first "=", exactly as typed. ovs-vsctl accepts some odd
// spellings it then ignores: an option is accepted when its name occurs in the command's
// option list followed by "=", "," or the end of the list, so "-exist" passes for add-br yet
// does not act as --may-exist. Implementations must therefore look options up by their exact
// name with Command.Option or Command.Has.
type CommandOption struct {
	Name     string
	Value    string
	HasValue bool
}

// Option returns the value of the option with exactly this name (for example "--id") and
// whether the option was given.
func (c *Command) Option(name string) (string, bool) {
	for _, o := range c.Options {
		if o.Name == name {
			return o.Value, true
		}
	}
	return "", false
}

// Has reports whether the option with exactly this name (for example "--may-exist") was given.
func (c *Command) Has(name string) bool {
	_, ok := c.Option(name)
	return ok
}
