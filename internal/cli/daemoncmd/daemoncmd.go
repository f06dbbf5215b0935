package daemoncmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/ovsplane/ovsplane/model"
)

// Commands lists the command names Main runs.
var commands = []string{"status", "apply", "plugin", "overlay"}

// Env is what the commands take from the process.
type Env struct {
	// Args is the full command line, program name first.
	Args []string
	// Getenv reads the environment (os.Getenv in the real program).
	Getenv         func(string) string
	Stdout, Stderr io.Writer
	// StderrTerminal says Stderr is a terminal: apply then draws a progress bar on it.
	StderrTerminal bool
	// Stat reads a file's metadata (nil: os.Stat); Discover looks for the default API socket
	// with it.
	Stat func(name string) (fs.FileInfo, error)
	// Daemon is the --daemon address CutDaemon took from an ovs-vsctl line ("": none), for
	// RoutePort. The daemon commands read --daemon from Args themselves.
	Daemon string
	// IfaceTypes, when not nil, reads the running Open vSwitch's interface types
	// (Open_vSwitch.iface_types) from the database of the line (vsctl.IfaceTypes). RoutePort
	// calls it only for a line naming a type outside OVSInterfaceTypes.
	IfaceTypes func(ctx context.Context) ([]string, error)
}

// Handles reports whether args (program name first) is a daemon command line: whether its
// first argument that does not start with "-" (and is not the value of a daemon command's
// option written "--name VALUE", like --daemon ADDR) is "status", "apply", "plugin" or
// "overlay".
func Handles(args []string) bool {
	rest := args[min(1, len(args)):]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if slices.Contains(valueOptions, a) {
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") {
			return slices.Contains(commands, a)
		}
	}
	return false
}

// valueOptions are the daemon commands' options that take a value, as they may be written
// with the value in the next argument.
var valueOptions = []string{"--daemon", "--format", "--file", "-f", "--timeout", "--jobs",
	"--private-key", "--certificate", "--ca-cert"}

// IsTerminal reports whether f is a terminal (not merely a character device such as
// /dev/null), for Env.StderrTerminal.
func IsTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// opts are the options of both commands.
type opts struct {
	daemon   string
	format   string
	file     string
	timeout  time.Duration
	jobs     int
	tls      model.TLS
	help     bool
	command  string
	args     []string
	progName string
}

// usageError is a command-line mistake (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func parse(env Env) (*opts, error) {
	o := &opts{progName: "vsctl"}
	if len(env.Args) > 0 {
		o.progName = baseName(env.Args[0])
	}
	fs := pflag.NewFlagSet(o.progName, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.daemon, "daemon", "", "ovsplaned API address, unix:PATH or tcp:HOST:PORT (default $"+envAddr+", else "+model.DefaultAPIAddr()+")")
	fs.StringVar(&o.format, "format", "table", "status, plugin and overlay output: table or json")
	fs.StringVarP(&o.file, "file", "f", "", "apply: YAML file of bridges with their ports (- for standard input)")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this long (like 30s; default: no limit)")
	fs.IntVar(&o.jobs, "jobs", defaultJobs, "apply: ports applied concurrently")
	fs.StringVar(&o.tls.PrivateKey, "private-key", "", "TLS private key (PEM) for a tcp: daemon that verifies clients")
	fs.StringVar(&o.tls.Certificate, "certificate", "", "TLS certificate (PEM) for a tcp: daemon that verifies clients")
	fs.StringVar(&o.tls.CACert, "ca-cert", "", "CA certificate (PEM) that signed a tcp: daemon's certificate")
	fs.BoolVarP(&o.help, "help", "h", false, "show this help")
	if err := fs.Parse(env.Args[min(1, len(env.Args)):]); err != nil {
		return nil, &usageError{err.Error()}
	}
	if o.help {
		return o, nil
	}
	rest := fs.Args()
	if len(rest) == 0 || !slices.Contains(commands, rest[0]) {
		return nil, &usageError{"expected a command: status, apply, plugin or overlay"}
	}
	o.command, o.args = rest[0], rest[1:]
	if o.daemon == "" && env.Getenv != nil {
		o.daemon = env.Getenv(envAddr)
	}
	if o.daemon == "" {
		o.daemon = model.DefaultAPIAddr()
	}
	if o.format != "table" && o.format != "json" {
		return nil, &usageError{fmt.Sprintf("--format=%s: unknown format (table or json)", o.format)}
	}
	if o.jobs < 1 {
		return nil, &usageError{fmt.Sprintf("--jobs=%d: at least 1", o.jobs)}
	}
	return o, nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

const usage = `%[1]s daemon commands (they talk to ovsplaned, not to OVSDB):
  %[1]s [OPTIONS] status [OBJECT...]   status of managed objects (all, or those named:
                                   KIND/NAME like port/vhu1, or NAME for every kind);
                                   exit 0 when all are ready
  %[1]s [OPTIONS] apply -f FILE        apply bridges, then their ports, from a YAML file
                                   shaped like ovsplaned's config (bridges: with ports:)
  %[1]s [OPTIONS] plugin list          the configured plugins: NAME VERSION STATE TYPES
                                   RESTARTS
  %[1]s [OPTIONS] plugin status [NAME] each plugin's (or NAME's) details, with why it is
                                   not running and its last error; exit 0 when all
                                   shown are running
  %[1]s [OPTIONS] plugin stats NAME    NAME's data-path jobs: state, latest stats sample;
                                   exit 0 when all are running
  %[1]s [--daemon=ADDR] [--may-exist] add-port BRIDGE PORT -- set Interface PORT type=TYPE
        [options:KEY=VALUE]... [external_ids:KEY=VALUE]...
                                   a port of a plugin's TYPE (one Open vSwitch does
                                   not have): added by ovsplaned; refused, writing
                                   nothing, when no ovsplaned is found
  %[1]s [OPTIONS] overlay nodes        the overlay fabric's nodes: kind, health, applied
                                   route version (through the daemon's read-only view)
  %[1]s [OPTIONS] overlay links        measured links: bandwidth, latency, loss, cost
  %[1]s [OPTIONS] overlay routes NODE [VERSION]
                                   NODE's route table (default: the newest version)
  %[1]s [OPTIONS] overlay versions     newest route version, slowest node, controller
                                   lease; exit 0 when every node not down runs it
  %[1]s [OPTIONS] overlay lookup SRC DST
                                   the path forwarding takes, its cost and the route
                                   version; exit 1 when there is no route
Options:
  --daemon=ADDR        ovsplaned API: unix:PATH or tcp:HOST:PORT (default $%[2]s,
                       else %[3]s; a routed add-port uses
                       that default only when the socket exists). Accepted on
                       every line: ovs-vsctl's commands ignore it
  --format=table|json  status, plugin and overlay output (default table)
  --timeout=DURATION   give up after this long (default: no limit)
  --jobs=N             apply: ports in flight at once (default %[4]d)
  --private-key=FILE --certificate=FILE --ca-cert=FILE   TLS files for a tcp: daemon
`

// Usage returns the help of the daemon commands, program being the program's name; vsctl's
// --help prints it after ovs-vsctl's own text.
func Usage(program string) string {
	return fmt.Sprintf(usage, program, envAddr, model.DefaultAPIAddr(), defaultJobs)
}

// Main runs one daemon command line and returns its exit status.
func Main(ctx context.Context, env Env) int {
	o, err := parse(env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v (use --help for help)\n", progName(env), err)
		return 2
	}
	if o.help {
		fmt.Fprint(env.Stdout, Usage(o.progName))
		return 0
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	c, err := dialAPI(o.daemon, o.tls)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: --daemon: %v\n", o.progName, err)
		return 2
	}
	defer c.Close()
	r := &runner{o: o, c: c, env: env}
	switch o.command {
	case "status":
		err = r.status(ctx)
	case "plugin":
		err = r.plugin(ctx)
	case "overlay":
		err = r.overlay(ctx)
	default:
		err = r.apply(ctx)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errNotReady):
		return 1
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(env.Stderr, "%s: %s: %v\n", o.progName, o.command, err)
		return 2
	}
	fmt.Fprintf(env.Stderr, "%s: %s: %s\n", o.progName, o.command, describe(err, o.daemon))
	return 1
}

func progName(env Env) string {
	if len(env.Args) > 0 {
		return baseName(env.Args[0])
	}
	return "vsctl"
}

// errNotReady: the command ran and reported what it found, which is not all ready (exit 1).
var errNotReady = errors.New("not ready")

// runner runs one command against one client.
type runner struct {
	o   *opts
	c   *apiClient
	env Env
}

// describe turns an API error into a message for people: the daemon's own message without
// the code prefix, and for an unreachable daemon, what to do.
func describe(err error, addr string) string {
	if errors.Is(err, errUnreachable) {
		msg := err.Error()
		return fmt.Sprintf("%s\nis ovsplaned running? Start it (systemctl start ovsplaned, or ovsplaned --config FILE), "+
			"or point --daemon=ADDR or $%s at the address it listens on (its api.listen; default %s)",
			msg, envAddr, model.DefaultAPIAddr())
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}
