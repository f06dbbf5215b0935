package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// The differential test runs command lines through Parse and through the real ovs-vsctl.
// ovs-vsctl runs with OVS_RUNDIR=/nonexistent, so its default database is a socket that does
// not exist: a line that parses fails to connect at once ("database connection failed") and
// nothing can ever be changed. None of the lines uses --retry (which would wait for the
// timeout) or names a database of its own, and OVS_LOGDIR points at a temporary directory in
// case an abbreviation turns into --log-file.
//
// Not determined, hence not covered: what ovs-vsctl does with the --log-file it opens while
// reading options (a file that cannot be opened makes it exit 1 after a log line, which no
// parser can predict; see ParseError.Options), and --retry with a timeout, which ends with
// SIGALRM rather than a message.

const (
	vsctlPath = "/usr/bin/ovs-vsctl"
	noDB      = "unix:/nonexistent/db.sock"
	// connFailed is ovs-vsctl's last stderr line for a line that parsed.
	connFailed = "ovs-vsctl: " + noDB + ": database connection failed (No such file or directory)"
)

// parseShaped matches every message this package produces; a line Parse accepts must not make
// ovs-vsctl print any of them.
var parseShaped = regexp.MustCompile(`unknown command '|command has no '|option specified multiple times|` +
	`missing command name|command requires at least|command takes at most|missing argument to '|` +
	`does not accept an argument|unrecognized option|is ambiguous|doesn't allow an argument|` +
	`requires an argument|invalid option --|on -t or --timeout is invalid|unknown output format|` +
	`unknown data format|^ovs-vsctl: processing "|unsupported syslog method`)

// vsctlResult is what one ovs-vsctl run printed and returned.
type vsctlResult struct {
	stdout, lastErr string
	status          int
}

// runVsctl runs ovs-vsctl with args in dir and returns its output and exit status.
func runVsctl(ctx context.Context, dir string, args []string) (vsctlResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, vsctlPath)
	cmd.Args = append([]string{"ovs-vsctl"}, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OVS_RUNDIR=/nonexistent", "OVS_LOGDIR="+dir, "OVS_SYSLOG_METHOD=null")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return vsctlResult{}, fmt.Errorf("run ovs-vsctl %q: %w", args, err)
	}
	lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
	return vsctlResult{stdout: stdout.String(), lastErr: lines[len(lines)-1], status: cmd.ProcessState.ExitCode()}, nil
}

// runAll runs ovs-vsctl on every line, several at a time.
func runAll(t *testing.T, lines [][]string) []vsctlResult {
	t.Helper()
	dir := t.TempDir()
	results := make([]vsctlResult, len(lines))
	errs := make([]error, len(lines))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(4, 2*runtime.NumCPU()) {
		wg.Go(func() {
			for i := range next {
				results[i], errs[i] = runVsctl(t.Context(), dir, lines[i])
			}
		})
	}
	for i := range lines {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return results
}

// compare checks Parse's verdict on args against ovs-vsctl's. later is the post-parse error
// expected from ovs-vsctl for a line that parses ("" for the connection failure); when
// anyLater is set, any message that does not look like a parse error is accepted instead.
func compare(args []string, r vsctlResult, later string, anyLater bool) error {
	inv, err := Parse(args)
	if err != nil {
		pe, ok := AsParseError(err)
		if !ok {
			return fmt.Errorf("Parse returned %T %v", err, err)
		}
		if want := pe.Line("ovs-vsctl", "ovs-vsctl"); r.lastErr+"\n" != want || r.status != pe.Status {
			return fmt.Errorf("Parse: status %d %q; ovs-vsctl: status %d %q", pe.Status, want, r.status, r.lastErr)
		}
		return nil
	}
	switch inv.Action {
	case ActionRun:
		switch {
		case later != "" && r.lastErr == "ovs-vsctl: "+later:
		case later == "" && r.lastErr == connFailed:
		case anyLater && r.status == 1 && !parseShaped.MatchString(r.lastErr):
		default:
			return fmt.Errorf("Parse accepted the line; ovs-vsctl: status %d %q (want %q)", r.status, r.lastErr, later)
		}
	case ActionVersion:
		if r.status != 0 || !strings.HasPrefix(r.stdout, "ovs-vsctl (Open vSwitch) 3.1") {
			return fmt.Errorf("Parse: --version; ovs-vsctl: status %d stdout %q", r.status, r.stdout)
		}
	default:
		want := map[Action]string{
			ActionListCommands: DefaultTable().CommandsListing(),
			ActionListOptions:  OptionsListing(),
		}[inv.Action]
		if inv.Action == ActionHelp {
			want = "" // checked by TestUsageMatchesBinary; the log directory is a temporary one
		}
		if r.status != 0 || (want != "" && r.stdout != want) {
			return fmt.Errorf("Parse: %v; ovs-vsctl: status %d, stdout differs: %v", inv.Action, r.status, r.stdout != want)
		}
	}
	return nil
}

// requireVsctl skips (or fails, under OVSPLANE_REQUIRE_LAB=1) without OVS, and skips when the
// installed ovs-vsctl is not 3.1, the version this package copies.
func requireVsctl(t *testing.T) {
	t.Helper()
	lab.Require(t, lab.NeedOVS)
	out, err := exec.Command(vsctlPath, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", vsctlPath, err)
	}
	if !strings.HasPrefix(string(out), "ovs-vsctl (Open vSwitch) 3.1.") {
		t.Skipf("the differential test is pinned to ovs-vsctl 3.1; found %q", strings.SplitN(string(out), "\n", 2)[0])
	}
}

// TestDifferential compares Parse with ovs-vsctl on the golden cases and on randomly built
// lines (VSCTL_DIFF_RANDOM sets how many, default 400; VSCTL_DIFF_SEED the seed).
func TestDifferential(t *testing.T) {
	requireVsctl(t)
	golden := goldenCases()
	n, seed := envInt(t, "VSCTL_DIFF_RANDOM", 400), envInt(t, "VSCTL_DIFF_SEED", 3)
	random := randomLines(rand.New(rand.NewPCG(uint64(seed), 1)), n)
	lines := make([][]string, 0, len(golden)+len(random))
	for _, c := range golden {
		lines = append(lines, c.args)
	}
	lines = append(lines, random...)
	start := time.Now()
	results := runAll(t, lines)
	t.Logf("%d golden and %d random lines through ovs-vsctl in %v", len(golden), len(random), time.Since(start))

	for i, c := range golden {
		t.Run("golden/"+caseName(c.args), func(t *testing.T) {
			r := results[i]
			recorded := "ovs-vsctl: " + c.want
			if c.want != "" && r.lastErr != recorded {
				t.Errorf("golden table is stale: ovs-vsctl now says %q, table says %q", r.lastErr, recorded)
			}
			if err := compare(c.args, r, c.later, false); err != nil {
				t.Error(err)
			}
		})
	}
	for i, args := range random {
		t.Run(fmt.Sprintf("random/%d", i), func(t *testing.T) {
			if err := compare(args, results[len(golden)+i], "", true); err != nil {
				t.Errorf("line %s: %v", strconv.Quote(strings.Join(args, "\x1f")), err)
				t.Logf("args: %#v", args)
			}
		})
	}
}

// TestUsageMatchesBinary compares Usage with ovs-vsctl --help.
func TestUsageMatchesBinary(t *testing.T) {
	requireVsctl(t)
	dir := t.TempDir()
	r, err := runVsctl(t.Context(), dir, []string{"--help"})
	if err != nil {
		t.Fatal(err)
	}
	if want := Usage("ovs-vsctl", noDB, dir+"/ovs-vsctl.log"); r.stdout != want || r.status != 0 {
		t.Errorf("Usage differs from ovs-vsctl --help (status %d):\n%s", r.status, lineDiff(want, r.stdout))
	}
}

// lineDiff returns the first differing line of a and b.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: ours %q, binary %q", i+1, x, y)
		}
	}
	return "(identical)"
}

// envInt returns the integer in environment variable name, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}
