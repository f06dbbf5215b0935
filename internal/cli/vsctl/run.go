package vsctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// Version is what --version prints after the program name, as ovs-vsctl 3.1.0 does.
const Version = "(Open vSwitch) 3.1.0\nDB Schema 8.3.1\n"

// Env is what one run of the program takes from its surroundings.
type Env struct {
	// Args is the full command line, program name first.
	Args []string
	// Getenv reads the environment (os.Getenv in the real program).
	Getenv         func(string) string
	Stdout, Stderr io.Writer
	// Alarm ends the process when the -t timeout expires, as ovs-vsctl's SIGALRM does. The
	// real program kills itself with SIGALRM; nil means: print the message and return 142.
	Alarm func()
	// MoreHelp, when not nil, returns text that -h/--help prints after ovs-vsctl's help
	// (which stays byte for byte ovs-vsctl's), preceded by an empty line: the real program
	// describes its own commands there (daemoncmd.Usage). Its argument is the program name.
	MoreHelp func(program string) string
}

// Main runs one vsctl command line and returns the exit status: 0 on success, 1 on errors, 2
// when br-exists finds no bridge, 142 when the timeout expires.
func Main(ctx context.Context, env Env) int {
	p := newProgram(env)
	return p.main(ctx)
}

type program struct {
	env      Env
	argv0    string
	name     string
	log      *logger
	handlers map[string]Handler
}

func newProgram(env Env) *program {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	argv0 := "ovs-vsctl"
	if len(env.Args) > 0 {
		argv0 = env.Args[0]
	}
	return &program{
		env: env, argv0: argv0, name: filepath.Base(argv0),
		log:      &logger{w: env.Stderr, program: filepath.Base(argv0), start: time.Now()},
		handlers: Commands(),
	}
}

// Commands returns the handlers of every command, by name.
func Commands() map[string]Handler {
	m := map[string]Handler{}
	registerDBCommands(m)
	registerVSwitchCommands(m)
	return m
}

func (p *program) rundir() string {
	if d := p.env.Getenv("OVS_RUNDIR"); d != "" {
		return d
	}
	return "/var/run/openvswitch"
}

func (p *program) logdir() string {
	if d := p.env.Getenv("OVS_LOGDIR"); d != "" {
		return d
	}
	return "/var/log/openvswitch"
}

func (p *program) fatal(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	msg := err.Error()
	var fe *Error
	if errors.As(err, &fe) {
		msg = fe.Msg
	}
	fmt.Fprintf(p.env.Stderr, "%s: %s\n", p.name, msg)
	return 1
}

func (p *program) main(ctx context.Context) int {
	inv, err := cli.Parse(p.env.Args[1:])
	if err != nil {
		if pe, ok := cli.AsParseError(err); ok {
			fmt.Fprint(p.env.Stderr, pe.Line(p.argv0, p.name))
			return pe.Status
		}
		return p.fatal(err)
	}
	defaultDB := "unix:" + p.rundir() + "/db.sock"
	switch inv.Action {
	case cli.ActionHelp:
		fmt.Fprint(p.env.Stdout, cli.Usage(p.name, defaultDB, p.logdir()+"/"+p.name+".log"))
		if p.env.MoreHelp != nil {
			fmt.Fprint(p.env.Stdout, "\n"+p.env.MoreHelp(p.name))
		}
		return 0
	case cli.ActionVersion:
		fmt.Fprint(p.env.Stdout, p.name+" "+Version)
		return 0
	case cli.ActionListCommands:
		fmt.Fprint(p.env.Stdout, cli.DefaultTable().CommandsListing())
		return 0
	case cli.ActionListOptions:
		fmt.Fprint(p.env.Stdout, cli.OptionsListing())
		return 0
	}
	opts := inv.Options
	p.log.console = cli.NewConsoleLog(opts.Verbose)
	if opts.HasLogFile {
		name := opts.LogFile
		if name == "" {
			name = p.logdir() + "/" + p.name + ".log"
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			p.log.printf("vlog", "WARN", "failed to open %s for logging: %s", name, dbcmd.Strerror(err))
		} else {
			f.Close()
		}
	}
	// ovs-vsctl logs its command line at level INFO (to syslog, by default) when some command
	// may write to the database; that message takes sequence number 1 of the process's log,
	// so the console's warnings start at 2.
	if !opts.NoSyslog {
		for _, c := range inv.Commands {
			if isWriter(c.Spec.Name) {
				p.log.n = 1
				break
			}
		}
	}

	if t := opts.EffectiveTimeout(p.env.Getenv("OVS_CTL_TIMEOUT")); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	// Connect while the schema is read and the prerequisites run; their errors still come
	// first, as in ovs-vsctl, which checks prerequisites before connecting.
	dialCtx, cancelDial := context.WithCancel(ctx)
	defer cancelDial()
	dialed := make(chan dialResult, 1)
	go func() {
		conn, err := p.dial(dialCtx, &opts, defaultDB)
		dialed <- dialResult{conn, err}
	}()
	abandon := func() {
		cancelDial()
		if r := <-dialed; r.conn != nil {
			r.conn.Close()
		}
	}

	schema := vswitchSchema()
	for i := range inv.Commands {
		c := &inv.Commands[i]
		h, ok := p.handlers[c.Spec.Name]
		if !ok || h.Run == nil && h.Pre == nil {
			abandon()
			return p.fatal(Fatalf("%s: command not implemented", c.Spec.Name))
		}
		if h.Pre != nil {
			pc := &Context{Ctx: ctx, Cmd: c, Opts: &opts, Schema: schema, Last: i == len(inv.Commands)-1, log: p.log}
			if err := h.Pre(pc); err != nil {
				abandon()
				return p.fatal(err)
			}
		}
	}

	code := p.execute(ctx, inv, &opts, schema, dialed)
	if ctx.Err() == context.DeadlineExceeded {
		return p.alarm()
	}
	return code
}

type dialResult struct {
	conn *dbcmd.Conn
	err  error
}

// dial connects to the --db remote (or the default one) with the SSL and leader options.
func (p *program) dial(ctx context.Context, opts *cli.Options, defaultDB string) (*dbcmd.Conn, error) {
	remote := defaultDB
	if opts.HasDB {
		remote = opts.DB
	}
	dopts := dbcmd.DialOptions{LeaderOnly: opts.LeaderOnly, Shuffle: opts.ShuffleRemotes, Retry: opts.Retry}
	if opts.PrivateKey != "" || opts.Certificate != "" || opts.CACert != "" {
		dopts.TLS = &dbcmd.TLSFiles{PrivateKey: opts.PrivateKey, Certificate: opts.Certificate, CACert: opts.CACert}
	}
	return dbcmd.Dial(ctx, remote, dopts)
}

// isWriter reports whether command may write to the database (ovs-vsctl's RW mode).
func isWriter(command string) bool {
	switch command {
	case "init", "add-br", "del-br", "br-set-external-id", "add-port", "del-port", "add-bond",
		"add-bond-iface", "del-bond-iface", "del-controller", "set-controller", "del-fail-mode",
		"set-fail-mode", "del-manager", "set-manager", "del-ssl", "set-ssl", "add-aa-mapping",
		"del-aa-mapping", "emer-reset", "add-zone-tp", "del-zone-tp", "set", "add", "remove",
		"clear", "create", "destroy":
		return true
	}
	return false
}

// alarm reports the expiry of -t as ovs-vsctl's SIGALRM handler does and ends the process.
func (p *program) alarm() int {
	p.log.printf("fatal_signal", "WARN", "terminating with signal 14 (Alarm clock)")
	if p.env.Alarm != nil {
		p.env.Alarm()
	}
	return 128 + int(syscall.SIGALRM)
}

// KillWithAlarm ends the process by SIGALRM, so that the shell sees what it sees when
// ovs-vsctl times out (status 142, "Alarm clock").
func KillWithAlarm() {
	signal.Reset(syscall.SIGALRM)
	_ = syscall.Kill(os.Getpid(), syscall.SIGALRM)
	time.Sleep(time.Second)
}

func (p *program) execute(ctx context.Context, inv *cli.Invocation, opts *cli.Options, schema *dbcmd.Schema, dialed <-chan dialResult) int {
	r := <-dialed
	conn, err := r.conn, r.err
	if err != nil {
		if ctx.Err() != nil {
			return 0 // the caller reports the timeout
		}
		var mt *dbcmd.MissingTLSError
		if errors.As(err, &mt) {
			for _, m := range mt.Missing {
				p.log.printf("stream_ssl", "ERR", "%s must be configured to use SSL", m)
			}
		}
		return p.fatal(err)
	}
	defer conn.Close()

	comment := p.name + ": " + escapeArgs(p.env.Args)
	backoff := 5 * time.Millisecond
	for {
		code, again := p.attempt(ctx, conn, inv, opts, schema, comment)
		if !again {
			return code
		}
		if ctx.Err() != nil {
			return 0
		}
		// Another writer changed what we read (or wait-until's condition is not met yet):
		// run everything again on a fresh view, a little later.
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// attempt runs the command list once; again is true when it must be retried.
func (p *program) attempt(ctx context.Context, conn *dbcmd.Conn, inv *cli.Invocation, opts *cli.Options, schema *dbcmd.Schema, comment string) (code int, again bool) {
	db := dbcmd.New(conn, schema)
	ovsRows, err := db.All(ctx, "Open_vSwitch")
	if err != nil {
		return p.connErr(ctx, err), false
	}
	var ovs *dbcmd.Row
	if len(ovsRows) > 0 {
		ovs = ovsRows[0]
	} else if ovs, err = db.Insert("Open_vSwitch", ""); err != nil {
		return p.fatal(err), false
	}
	state := &State{}
	syms := NewSymbols()
	ctxs := make([]*Context, len(inv.Commands))
	for i := range inv.Commands {
		c := &Context{
			Ctx: ctx, Cmd: &inv.Commands[i], Opts: opts, Schema: schema, DB: db, OVS: ovs,
			Symbols: syms, Last: i == len(inv.Commands)-1, State: state, log: p.log,
		}
		ctxs[i] = c
		h := p.handlers[c.Cmd.Spec.Name]
		if h.Run == nil {
			continue
		}
		if err := h.Run(c); err != nil {
			if errors.Is(err, ErrTryAgain) {
				return 0, true
			}
			if ctx.Err() != nil {
				return 0, false
			}
			return p.fatal(err), false
		}
	}
	for _, s := range syms.All() {
		if !s.Created {
			return p.fatal(Fatalf("row id \"%s\" is referenced but never created (e.g. with \"-- --id=%s create ...\")", s.Name, s.Name)), false
		}
	}
	for _, s := range syms.All() {
		switch {
		case s.StrongRef:
		case !s.WeakRef:
			p.log.printf("vsctl", "WARN", "row id \"%s\" was created but no reference to it was inserted, so it will not actually appear in the database", s.Name)
		default:
			p.log.printf("vsctl", "WARN", "row id \"%s\" was created but only a weak reference to it was inserted, so it will not actually appear in the database", s.Name)
		}
	}
	copts := dbcmd.CommitOptions{Comment: comment, DryRun: opts.DryRun}
	if !opts.NoWait {
		copts.IncrementNextCfg = ovs
	}
	res, err := db.Commit(ctx, copts)
	if err != nil {
		return p.connErr(ctx, err), false
	}
	switch res.Status {
	case dbcmd.TryAgain:
		return 0, true
	case dbcmd.Error:
		p.log.printf("ovsdb_idl", "WARN", "transaction error: %s", res.Error)
		return p.fatal(Fatalf("transaction error: %s", res.Error)), false
	}
	for i, c := range ctxs {
		h := p.handlers[c.Cmd.Spec.Name]
		if h.Post == nil {
			continue
		}
		c.Result = res
		if err := h.Post(c); err != nil {
			return p.fatal(err), false
		}
		_ = i
	}
	p.printOutputs(ctxs, opts)
	if !opts.NoWait && res.Status == dbcmd.Success {
		if err := conn.WaitCurCfg(ctx, res.NextCfg); err != nil {
			if ctx.Err() != nil {
				return 0, false
			}
			return p.fatal(err), false
		}
		p.checkIfaces(ctx, conn, schema, state, res)
	}
	return 0, false
}

func (p *program) connErr(ctx context.Context, err error) int {
	if ctx.Err() != nil {
		return 0
	}
	return p.fatal(err)
}

// printOutputs prints each command's output in order: its table in the --format style, or its
// text (with --oneline, on one line with newlines and backslashes escaped).
func (p *program) printOutputs(ctxs []*Context, opts *cli.Options) {
	var b strings.Builder
	var tw cli.TableWriter
	style := cli.TableStyleFromOptions(*opts)
	for _, c := range ctxs {
		switch {
		case c.Table != nil:
			b.WriteString(tw.Render(c.Table, style))
		case opts.Oneline:
			s := strings.TrimSuffix(c.Out.String(), "\n")
			s = strings.NewReplacer("\\", "\\\\", "\n", "\\n").Replace(s)
			b.WriteString(s + "\n")
		default:
			b.WriteString(c.Out.String())
		}
	}
	io.WriteString(p.env.Stdout, b.String())
}

// checkIfaces reports interfaces added by this invocation that ovs-vswitchd failed to set up,
// after it applied the transaction (ovs-vsctl's post-reload checks).
func (p *program) checkIfaces(ctx context.Context, conn *dbcmd.Conn, schema *dbcmd.Schema, state *State, res *dbcmd.Result) {
	if len(state.ExpectIfaces) == 0 {
		return
	}
	db := dbcmd.New(conn, schema)
	printed := false
	for _, temp := range state.ExpectIfaces {
		real, ok := res.UUIDs[temp]
		if !ok {
			continue
		}
		r, err := db.Get(ctx, "Interface", real, "name", "ofport", "error")
		if err != nil || r == nil {
			continue
		}
		ofport, _ := r.Loaded("ofport")
		if len(ofport.Keys) == 1 && ofport.Keys[0].Int != -1 {
			continue
		}
		name, _ := r.Loaded("name")
		errv, _ := r.Loaded("error")
		iname := ""
		if len(name.Keys) == 1 {
			iname = name.Keys[0].Str
		}
		if len(errv.Keys) == 1 && errv.Keys[0].Str != "" {
			fmt.Fprintf(p.env.Stderr, "%s: Error detected while setting up '%s': %s.  See ovs-vswitchd log for details.\n", p.name, iname, errv.Keys[0].Str)
		} else {
			fmt.Fprintf(p.env.Stderr, "%s: Error detected while setting up '%s'.  See ovs-vswitchd log for details.\n", p.name, iname)
		}
		printed = true
	}
	if printed {
		fmt.Fprintf(p.env.Stderr, "%s: The default log directory is \"%s\".\n", p.name, p.logdir())
	}
}

// escapeArgs joins a command line for the transaction comment, quoting words that need it.
func escapeArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsAny(a, " \t\n\"'\\$`") {
			out[i] = a
			continue
		}
		out[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
	}
	return strings.Join(out, " ")
}

// logger numbers log messages and prints those the console is configured for, as OVS's vlog
// does (by default "TIMESTAMP|SEQUENCE|MODULE|LEVEL|MESSAGE" for warnings and worse).
type logger struct {
	mu      sync.Mutex
	w       io.Writer
	n       int
	console *cli.ConsoleLog
	program string
	start   time.Time
}

func (l *logger) printf(module, level, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Messages of WARN and worse also go to syslog, so they take a sequence number even when
	// the console does not show them.
	l.n++
	console := l.console
	if console == nil {
		console = cli.NewConsoleLog(nil)
	}
	if !console.Enabled(module, level) {
		return
	}
	line := console.Line(l.program, module, level, fmt.Sprintf(format, args...), l.n, os.Getpid(), time.Now(), l.start)
	fmt.Fprintln(l.w, line)
}
