package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/internal/cli/cliconv"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/flowmon/internal/flowmonplugin"
)

// apiPrefix is where the daemon's API serves the query protocol (vswitchd/flowmonapi).
const apiPrefix = "/flowmon"

// target is where a command's queries go, as its flags say.
type target struct {
	socket, job, dataDir, daemon string
	timeout                      time.Duration
}

// bind defines the target flags on fs.
func (t *target) bind(fs *flag.FlagSet) {
	fs.StringVar(&t.socket, "socket", "", "a collector job's query socket")
	fs.StringVar(&t.job, "job", "", "the collector job whose socket in the data dir is asked")
	fs.StringVar(&t.dataDir, "data-dir", model.DefaultDataDir, "the daemon's data dir (its plugin-data/flowmon holds the sockets)")
	fs.StringVar(&t.daemon, "daemon", "", "ask through the daemon's API instead: unix:PATH of its socket")
	fs.DurationVar(&t.timeout, "timeout", query.DefaultQueryTimeout+5*time.Second, "bound on each request")
}

// client returns the client of the target.
func (t *target) client() (*query.Client, error) {
	if t.timeout <= 0 || t.timeout > time.Hour {
		return nil, fmt.Errorf("--timeout %s: want more than 0 and at most 1h", t.timeout)
	}
	set := 0
	for _, s := range []string{t.socket, t.job, t.daemon} {
		if s != "" {
			set++
		}
	}
	if set > 1 {
		return nil, errors.New("give one of --socket, --job and --daemon")
	}
	switch {
	case t.socket != "":
		return query.NewClient(t.socket, t.timeout), nil
	case t.daemon != "":
		path, ok := strings.CutPrefix(t.daemon, "unix:")
		if !ok || path == "" {
			return nil, fmt.Errorf("--daemon %q: want unix:PATH of the daemon's API socket", t.daemon)
		}
		return query.NewClientAt(path, apiPrefix, t.timeout), nil
	}
	dir := filepath.Join(t.dataDir, "plugin-data", flowmonplugin.Name)
	if t.job != "" {
		return query.NewClient(flowmonplugin.SocketPath(dir, t.job), t.timeout), nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("looking for collector sockets: %w", err)
	}
	var socks []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sock") && e.Type()&fs.ModeSocket != 0 {
			socks = append(socks, filepath.Join(dir, e.Name()))
		}
	}
	switch len(socks) {
	case 0:
		return nil, fmt.Errorf("no collector query socket in %s: start a flowmon-collector job, or give --socket, --job or --daemon", dir)
	case 1:
		return query.NewClient(socks[0], t.timeout), nil
	}
	return nil, fmt.Errorf("%d collector sockets in %s (%s): pick one with --job NAME", len(socks), dir, strings.Join(socks, ", "))
}

// runQuery is `flowmon query`.
func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flowmon query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var t target
	t.bind(fs)
	qf := query.BindFlags(fs)
	format := fs.String("format", "table", "output: table, json or csv")
	if err := fs.Parse(args); err != nil {
		return helpOrUsage(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flowmon query: unexpected argument %q: every filter is a flag (--src, --dst, ...)\n", fs.Arg(0))
		return 2
	}
	f, err := query.ParseFormat(*format)
	if err != nil {
		fmt.Fprintln(stderr, "flowmon query: --", err)
		return 2
	}
	q, err := qf.Query(time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "flowmon query: %v\n", err)
		return 2
	}
	c, err := t.client()
	if err != nil {
		fmt.Fprintln(stderr, "flowmon query:", err)
		return 2
	}
	res, err := c.Query(ctx, q)
	if err != nil {
		fmt.Fprintln(stderr, "flowmon query:", err)
		return 1
	}
	if err := query.Render(stdout, q, res, f); err != nil {
		fmt.Fprintln(stderr, "flowmon query:", err)
		return 1
	}
	return 0
}

// maxConfigFile bounds a check's configuration file.
const maxConfigFile = flowmonplugin.MaxConfigBytes

// runCheck is `flowmon check collector|gen FILE|JSON`.
func runCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 || (args[0] != "collector" && args[0] != "gen") {
		fmt.Fprintln(stderr, "usage: flowmon check collector|gen FILE|JSON")
		return 2
	}
	data, err := readConfig(args[1])
	if err != nil {
		fmt.Fprintln(stderr, "flowmon check:", err)
		return 2
	}
	var cfg any
	if args[0] == "collector" {
		cfg, err = flowmonplugin.ParseCollectorConfig(data)
	} else {
		cfg, err = flowmonplugin.ParseGenConfig(data)
	}
	if err != nil {
		fmt.Fprintf(stderr, "invalid flowmon-%s configuration: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(stdout, "ok: %+v\n", cfg)
	return 0
}

// readConfig returns inline JSON as is, or reads the file it names (bounded).
func readConfig(arg string) ([]byte, error) {
	if strings.HasPrefix(strings.TrimSpace(arg), "{") {
		return []byte(arg), nil
	}
	f, err := os.Open(arg)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", arg, err)
	}
	if len(data) > maxConfigFile {
		return nil, fmt.Errorf("%s: more than %d bytes: a job's configuration is a small JSON object", arg, maxConfigFile)
	}
	return data, nil
}

// helpOrUsage is the exit status of a subcommand whose flags did not parse (the flag set has
// printed the usage): 0 for -h/--help, which asked for it, cliconv.ExitUsage otherwise.
func helpOrUsage(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return cliconv.ExitUsage
}
