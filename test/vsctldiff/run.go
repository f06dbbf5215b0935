//go:build linux

package vsctldiff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// Step is what one command line did. Exit is the exit status, or 128 + the signal's number
// when a signal ended the program (as a shell reports it), or -1 when StepTimeout cut it.
type Step struct {
	Args   []string
	Stdout string
	Stderr string
	Exit   int
}

// Outcome is what a whole session did: its steps and the database it left, normalised so that
// two runs of equivalent tools compare equal (see Normalise and Dump).
type Outcome struct {
	Steps []Step
	Dump  string
}

// StepTimeout bounds each command line; a step that hits it records exit status -1.
const StepTimeout = 30 * time.Second

// Run executes s with binary (a path or a name on $PATH) against a fresh ovsdb-server with a
// dummy-datapath ovs-vswitchd, both torn down at the end of the test. Each line runs as
// `binary --db=unix:SOCK LINE…` in that lab's environment. Outputs are normalised with the
// lab's directory replaced by $DIR, the program's name (or "ovs-vsctl") by PROG, the timestamps
// of log lines printed on the console by TIME, and UUIDs numbered in order of first appearance
// across the session.
func Run(t testing.TB, binary string, s Session) *Outcome {
	t.Helper()
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	n := newNormaliser(db.Dir, binary)
	out := &Outcome{}
	for _, args := range s.Lines {
		out.Steps = append(out.Steps, runStep(t, db, binary, args, n))
	}
	out.Dump = Dump(t, db)
	return out
}

func runStep(t testing.TB, db *lab.OVSDB, binary string, args []string, n *normaliser) Step {
	ctx, cancel := context.WithTimeout(context.Background(), StepTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"--db=" + db.Endpoint}, args...)...)
	cmd.Env = append(cmd.Environ(), db.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	st := Step{Args: args, Stdout: n.text(stdout.String()), Stderr: n.text(stderr.String())}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		st.Exit = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Killed by a signal (ovs-vsctl's --timeout ends by SIGALRM): the status a
			// shell reports, 128 + the signal's number (142 for SIGALRM).
			st.Exit = 128 + int(ws.Signal())
		}
	default:
		t.Fatalf("running %s %s: %v", binary, strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		st.Exit = -1
	}
	return st
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// vlogTimeRE is the timestamp that starts a log line printed on the console (OVS's default
// pattern "%D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c|%p|%m"): two runs print it at different times.
var vlogTimeRE = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\|`)

// normaliser rewrites run-specific text: the lab directory, the program name, the timestamps of
// console log lines, and UUIDs, which are numbered in order of first appearance so that "the
// row created by step 3" reads the same in both runs.
type normaliser struct {
	dir, path string
	progRE    *regexp.Regexp
	ids       map[string]string
}

// newNormaliser returns a normaliser for runs of the program at path (as it was invoked).
func newNormaliser(dir, path string) *normaliser {
	// The program speaks of itself by the name it was invoked as: getopt's messages use the
	// path as typed, everything else the base name ("vsctl: …", "usage: vsctl …",
	// "vsctl (Open vSwitch) 3.1.0", "$OVS_LOGDIR/vsctl.log"); ovs-vsctl does the same. All of
	// these read PROG.
	names := regexp.QuoteMeta(filepath.Base(path)) + "|ovs-vsctl"
	return &normaliser{
		dir: dir, path: path,
		progRE: regexp.MustCompile(`(?m)(^|[\s/])(` + names + `)([: .])`),
		ids:    map[string]string{},
	}
}

// loadWarningRE matches the lines OVS's timeval module logs when the process was starved of
// CPU (a loaded machine, not a difference between the tools): "Unreasonably long …ms poll
// interval" and the two lines of detail that follow it.
var loadWarningRE = regexp.MustCompile(`^TIME\|\d{5}\|timeval\|WARN\|(Unreasonably long \d+ms poll interval|faults: |context switches: )`)

// vlogSeqRE is a normalised vlog line's sequence number.
var vlogSeqRE = regexp.MustCompile(`^TIME\|(\d{5})\|`)

// dropLoadWarnings removes timeval's load warnings from normalised output and renumbers the
// vlog lines after them as if they had never been logged, so that a starved ovs-vsctl compares
// equal to an unstarved one (or to vsctl, which never logs them).
func dropLoadWarnings(s string) string {
	if !strings.Contains(s, "|timeval|WARN|") {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	out := lines[:0]
	dropped := 0
	for _, l := range lines {
		if loadWarningRE.MatchString(l) {
			dropped++
			continue
		}
		if m := vlogSeqRE.FindStringSubmatch(l); m != nil && dropped > 0 {
			n, _ := strconv.Atoi(m[1])
			l = fmt.Sprintf("TIME|%05d|", n-dropped) + l[len(m[0]):]
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

// ownHelpRE is what vsctl's --help prints after ovs-vsctl's help: its own commands (see
// daemoncmd.Usage), which ovs-vsctl does not have. The comparison is of the rest.
var ownHelpRE = regexp.MustCompile(`(?s)\n\S+ daemon commands \(they talk to ovsplaned, not to OVSDB\):\n.*$`)

func (n *normaliser) text(s string) string {
	s = ownHelpRE.ReplaceAllString(s, "")
	if n.path != "" && strings.Contains(n.path, "/") {
		s = strings.ReplaceAll(s, n.path+": ", "PROG: ")
	}
	s = strings.ReplaceAll(s, n.dir, "$DIR")
	s = n.progRE.ReplaceAllString(s, "${1}PROG${3}")
	s = vlogTimeRE.ReplaceAllString(s, "TIME|")
	s = dropLoadWarnings(s)
	return uuidRE.ReplaceAllStringFunc(s, func(u string) string {
		if id, ok := n.ids[u]; ok {
			return id
		}
		id := fmt.Sprintf("<uuid%d>", len(n.ids))
		n.ids[u] = id
		return id
	})
}

// volatile lists columns that differ between two runs of the same session for reasons that have
// nothing to do with the tool under test (ovs-vswitchd's runtime state, versions, timings).
var volatile = map[string]bool{
	"_version": true, "datapath_id": true, "datapath_version": true, "statistics": true, "status": true,
	"mac_in_use": true, "ifindex": true, "link_resets": true, "link_speed": true, "link_state": true,
	"admin_state": true, "duplex": true, "mtu": true, "lacp_current": true, "ofport": true, "cur_cfg": true,
	"system_type": true, "system_version": true, "ovs_version": true, "db_version": true, "dpdk_version": true,
	"dpdk_initialized": true, "iface_types": true, "datapath_types": true, "rstp_status": true,
	"bfd_status": true, "cfm_fault": true, "cfm_fault_status": true, "cfm_health": true, "cfm_remote_mpids": true,
	"cfm_remote_opstate": true, "cfm_flap_count": true, "bond_active_slave": true, "rstp_statistics": true,
}

// Dump returns the database's contents as sorted text: one line per row, "Table: col=value …",
// volatile columns left out and UUIDs replaced by <uuid> (row order and UUIDs differ between
// servers; what the rows say must not).
func Dump(t testing.TB, db *lab.OVSDB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StepTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ovsdb-client", "-f", "json", "dump", db.Endpoint, "Open_vSwitch")
	cmd.Env = append(cmd.Environ(), db.Env()...)
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("ovsdb-client dump: %v", err)
	}
	var lines []string
	dec := json.NewDecoder(bytes.NewReader(raw))
	for dec.More() {
		var tbl struct {
			Caption  string
			Headings []string
			Data     [][]json.RawMessage
		}
		if err := dec.Decode(&tbl); err != nil {
			t.Fatalf("ovsdb-client dump output: %v", err)
		}
		table := strings.TrimSuffix(tbl.Caption, " table")
		for _, row := range tbl.Data {
			var cells []string
			for i, h := range tbl.Headings {
				if volatile[h] || h == "_uuid" || i >= len(row) {
					continue
				}
				cells = append(cells, h+"="+uuidRE.ReplaceAllString(string(row[i]), "<uuid>"))
			}
			lines = append(lines, table+": "+strings.Join(cells, " "))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// Compare lists the differences between a reference outcome (the real ovs-vsctl) and a
// candidate's, one human-readable entry per difference. stderr is compared only when
// withStderr is true.
func Compare(ref, cand *Outcome, withStderr bool) []string {
	var diffs []string
	if len(ref.Steps) != len(cand.Steps) {
		return []string{fmt.Sprintf("step count: %d vs %d", len(ref.Steps), len(cand.Steps))}
	}
	for i := range ref.Steps {
		r, c := ref.Steps[i], cand.Steps[i]
		line := strings.Join(r.Args, " ")
		if r.Exit != c.Exit {
			diffs = append(diffs, fmt.Sprintf("step %d `%s`: exit %d, candidate %d", i+1, line, r.Exit, c.Exit))
		}
		if r.Stdout != c.Stdout {
			diffs = append(diffs, fmt.Sprintf("step %d `%s`: stdout\n--- ovs-vsctl\n%s--- candidate\n%s", i+1, line, r.Stdout, c.Stdout))
		}
		if withStderr && r.Stderr != c.Stderr {
			diffs = append(diffs, fmt.Sprintf("step %d `%s`: stderr\n--- ovs-vsctl\n%s--- candidate\n%s", i+1, line, r.Stderr, c.Stderr))
		}
	}
	if ref.Dump != cand.Dump {
		diffs = append(diffs, "final database differs:\n"+lineDiff(ref.Dump, cand.Dump))
	}
	return diffs
}

// lineDiff shows the lines only one side has.
func lineDiff(a, b string) string {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range as {
		if !slices.Contains(bs, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bs {
		if !slices.Contains(as, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
