//go:build linux

package vsctldiff

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// sessionParallelism is how many sessions run at once unless -test.parallel is given: a session
// spends most of its time waiting for ovs-vswitchd to reconfigure, not on the CPU, so running more
// sessions than CPUs shortens the package's run several times over.
const sessionParallelism = 4

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", fmt.Sprint(sessionParallelism))
	}
	os.Exit(m.Run())
}

// references caches ovs-vsctl's outcome on each session by name, so that TestVsctlMatchesOvsVsctl
// reuses the runs TestCorpusIsDeterministic and TestRandomSessionsAreDeterministic made (the
// sessions are deterministic: that is what those tests prove).
var references sync.Map // session name → *Outcome

// reference returns ovs-vsctl's outcome on s, running it unless a run is cached.
func reference(t *testing.T, s Session) *Outcome {
	t.Helper()
	if o, ok := references.Load(s.Name); ok {
		return o.(*Outcome)
	}
	o := Run(t, "ovs-vsctl", s)
	references.Store(s.Name, o)
	return o
}

// fixedSeeds are the seeds of the random sessions every run checks; seeds adds one
// from the clock, logged so that a failure can be replayed with VSCTLDIFF_SEED. A seed that once
// found a difference stays here (1796289313307554790: clear of an empty column bumped next_cfg).
var fixedSeeds = []int64{1, 2, 3, 1796289313307554790}

// randomLines is the length of each random session.
const randomLines = 60

// sessionFiles returns the names of every session file under testdata/sessions, sorted.
func sessionFiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "sessions", "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no session files in testdata/sessions (%v)", err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	slices.Sort(names)
	return names
}

// seeds returns the fixed seeds plus one taken from the clock (or from $VSCTLDIFF_SEED, to replay
// a failure), which it logs.
func seeds(t *testing.T) []int64 {
	t.Helper()
	s := time.Now().UnixNano()
	if env := os.Getenv("VSCTLDIFF_SEED"); env != "" {
		if _, err := fmt.Sscan(env, &s); err != nil {
			t.Fatalf("VSCTLDIFF_SEED=%q: %v", env, err)
		}
	}
	t.Logf("random session seeds: %v and %d (replay one with VSCTLDIFF_SEED=%d)", fixedSeeds, s, s)
	return append(slices.Clone(fixedSeeds), s)
}

// randomSession is the session RandomSession builds from seed, named after it.
func randomSession(seed int64) Session {
	s := RandomSession(rand.New(rand.NewSource(seed)), randomLines)
	s.Name = fmt.Sprintf("random-%d", seed)
	return s
}

// requireNoDiffs fails t with every difference between a and b.
func requireNoDiffs(t *testing.T, what string, a, b *Outcome) {
	t.Helper()
	if diffs := Compare(a, b, true); len(diffs) != 0 {
		t.Errorf("%s: %d differences:\n%s", what, len(diffs), strings.Join(diffs, "\n\n"))
	}
}

// exitCounts counts the steps of o by exit status.
func exitCounts(o *Outcome) map[int]int {
	m := map[int]int{}
	for _, st := range o.Steps {
		m[st.Exit]++
	}
	return m
}

// Every session file must be deterministic: two runs of ovs-vsctl must not differ, or the
// differences TestVsctlMatchesOvsVsctl reports about vsctl could be noise. Each session must also
// exercise both successes and failures.
func TestCorpusIsDeterministic(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	for _, name := range sessionFiles(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := loadSession(t, name)
			a, b := Run(t, "ovs-vsctl", s), Run(t, "ovs-vsctl", s)
			references.Store(s.Name, a)
			requireNoDiffs(t, "ovs-vsctl vs itself", a, b)
			if ex := exitCounts(a); ex[0] == 0 || ex[1] == 0 {
				t.Errorf("exit statuses %v: want successes (0) and failures (1)", ex)
			}
			if ex := exitCounts(a); ex[-1] != 0 {
				t.Errorf("%d steps timed out", ex[-1])
			}
		})
	}
}

// Random sessions must be deterministic too, and mix successes with failures.
func TestRandomSessionsAreDeterministic(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	for _, seed := range seeds(t) {
		s := randomSession(seed)
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			a, b := Run(t, "ovs-vsctl", s), Run(t, "ovs-vsctl", s)
			references.Store(s.Name, a)
			requireNoDiffs(t, "ovs-vsctl vs itself", a, b)
			if ex := exitCounts(a); ex[0] == 0 || ex[1] == 0 || ex[-1] != 0 {
				t.Errorf("exit statuses %v: want successes (0), failures (1), no timeouts (-1)", ex)
			}
		})
	}
}

// RandomSession must be a function of its generator's state only.
func TestRandomSessionIsReproducible(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		a := RandomSession(rand.New(rand.NewSource(seed)), 200)
		b := RandomSession(rand.New(rand.NewSource(seed)), 200)
		if len(a.Lines) != 200 {
			t.Fatalf("seed %d: %d lines, want 200", seed, len(a.Lines))
		}
		for i := range a.Lines {
			if !slices.Equal(a.Lines[i], b.Lines[i]) {
				t.Fatalf("seed %d line %d: %q then %q", seed, i, a.Lines[i], b.Lines[i])
			}
		}
	}
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's working directory")
		}
		dir = parent
	}
}

// buildVsctl builds ./cmd/vsctl into a temporary directory and returns the binary's path.
func buildVsctl(t *testing.T) string {
	t.Helper()
	root := moduleRoot(t)
	bin := filepath.Join(t.TempDir(), "vsctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/vsctl")
	cmd.Dir = root
	// Built as `make build` builds it: static (no cgo), which starts ~3 ms faster.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(root, "cmd", "vsctl")); errors.Is(statErr, os.ErrNotExist) {
			t.Fatalf("the candidate does not exist yet: %s/cmd/vsctl is missing, so there is nothing to compare with ovs-vsctl (go build: %v)", root, err)
		}
		t.Fatalf("cannot build the candidate: `go build ./cmd/vsctl` in %s failed: %v\n%s", root, err, out)
	}
	return bin
}

// TestVsctlMatchesOvsVsctl is the compatibility promise: on every session file and on random
// sessions, vsctl must exit, print and leave the database exactly as ovs-vsctl does.
func TestVsctlMatchesOvsVsctl(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	vsctl := buildVsctl(t)
	var sessions []Session
	for _, name := range sessionFiles(t) {
		sessions = append(sessions, loadSession(t, name))
	}
	for _, seed := range seeds(t) {
		sessions = append(sessions, randomSession(seed))
	}
	for _, s := range sessions {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			ref, cand := reference(t, s), Run(t, vsctl, s)
			if diffs := Compare(ref, cand, true); len(diffs) != 0 {
				t.Errorf("vsctl differs from ovs-vsctl in %d places:\n%s", len(diffs), strings.Join(diffs, "\n\n"))
			}
		})
	}
}

// TestTranscript writes what ovs-vsctl does on each session into $VSCTLDIFF_TRANSCRIPT (a
// directory), one NAME.out per session: each line, its exit status, stdout and stderr, then the
// final dump. A tool for writing sessions and for reading what vsctl must print; skipped unless
// the variable is set. $VSCTLDIFF_SESSION picks one session file, or random-SEED a random one.
func TestTranscript(t *testing.T) {
	dir := os.Getenv("VSCTLDIFF_TRANSCRIPT")
	if dir == "" {
		t.Skip("set VSCTLDIFF_TRANSCRIPT=DIR to write transcripts")
	}
	lab.Require(t, lab.NeedOVS)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var sessions []Session
	only := os.Getenv("VSCTLDIFF_SESSION")
	var seed int64
	if n, _ := fmt.Sscanf(only, "random-%d", &seed); n == 1 {
		sessions = append(sessions, randomSession(seed))
	} else {
		for _, name := range sessionFiles(t) {
			if only == "" || only == name {
				sessions = append(sessions, loadSession(t, name))
			}
		}
	}
	for _, s := range sessions {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			o := Run(t, "ovs-vsctl", s)
			var b strings.Builder
			for _, st := range o.Steps {
				fmt.Fprintf(&b, "$ %s\n[exit %d]\n%s", strings.Join(st.Args, " "), st.Exit, st.Stdout)
				if st.Stderr != "" {
					fmt.Fprintf(&b, "stderr: %s", st.Stderr)
				}
			}
			fmt.Fprintf(&b, "=== dump\n%s\n", o.Dump)
			if err := os.WriteFile(filepath.Join(dir, strings.TrimSuffix(s.Name, ".txt")+".out"), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}
