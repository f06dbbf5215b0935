// Package standintest installs and watches the dpdk-vdpa stand-in of the vdpa plugin's tests
// (plugins/vdpa/testdata/dpdkvdpa-standin): a small program that records each run's pid, parent
// and argv beside its binary, stays up, exits on SIGTERM and crashes on SIGUSR1. For tests only.
package standintest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
)

// pkg is the stand-in's import path.
const pkg = "github.com/ovsplane/ovsplane/plugins/vdpa/testdata/dpdkvdpa-standin"

// StandIn is one installed copy of the stand-in: its records land in Dir.
type StandIn struct {
	Path string // the binary, Dir/dpdk-vdpa
	Dir  string
}

// Run is one recorded run.
type Run struct {
	PID  int      `json:"pid"`
	PPID int      `json:"ppid"`
	Argv []string `json:"argv"`
}

// Install builds the stand-in (once per test binary) and copies it, mode 0755, as dpdk-vdpa
// into a directory of its own (short, world-readable: a plugin process runs it).
func Install(tb testing.TB) *StandIn {
	tb.Helper()
	bin, err := os.ReadFile(testkit.BuildOnce(tb, pkg))
	if err != nil {
		tb.Fatal(err)
	}
	dir := testkit.ShortTempDir(tb, "standin")
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	s := &StandIn{Path: filepath.Join(dir, "dpdk-vdpa"), Dir: dir}
	if err := os.WriteFile(s.Path, bin, 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { // a test that failed half way must not leave stand-ins behind
		for _, r := range s.Runs(tb) {
			if Alive(r.PID) {
				_ = killPID(r.PID)
			}
		}
	})
	return s
}

// Runs returns the recorded runs in the order they started (by record time).
func (s *StandIn) Runs(tb testing.TB) []Run {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(s.Dir, "run-*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	type rec struct {
		run Run
		at  time.Time
	}
	var recs []rec
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			tb.Fatal(err)
		}
		var r Run
		if err := json.Unmarshal(b, &r); err != nil {
			tb.Fatalf("%s: %v", p, err)
		}
		recs = append(recs, rec{r, fi.ModTime()})
	}
	slices.SortStableFunc(recs, func(a, b rec) int { return a.at.Compare(b.at) })
	out := make([]Run, len(recs))
	for i, r := range recs {
		out[i] = r.run
	}
	return out
}

// WaitRuns waits (up to 20s) until n runs are recorded and returns them.
func (s *StandIn) WaitRuns(tb testing.TB, n int) []Run {
	tb.Helper()
	var runs []Run
	testkit.Eventually(tb, 20*time.Second, 20*time.Millisecond, func() error {
		if runs = s.Runs(tb); len(runs) < n {
			return fmt.Errorf("%d stand-in runs recorded, want %d", len(runs), n)
		}
		return nil
	})
	return runs
}

// Set creates (on) or removes the flag file name beside the binary: "crash-on-start" or
// "ignore-sigterm".
func (s *StandIn) Set(tb testing.TB, name string, on bool) {
	tb.Helper()
	p := filepath.Join(s.Dir, name)
	var err error
	if on {
		err = os.WriteFile(p, nil, 0o644)
	} else if err = os.Remove(p); os.IsNotExist(err) {
		err = nil
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// Alive reports whether pid exists in /proc and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// WaitGone waits (up to 20s) until pid is no longer alive.
func WaitGone(tb testing.TB, pid int, what string) {
	tb.Helper()
	testkit.EventuallyTrue(tb, 20*time.Second, 20*time.Millisecond, what, func() bool { return !Alive(pid) })
}

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// PIDs returns the live (not zombie) processes running this copy of the stand-in, from /proc:
// what a test checks to prove none is left behind, whoever started it.
func (s *StandIn) PIDs(tb testing.TB) []int {
	tb.Helper()
	return testkit.PIDs(tb, func(pid int) bool {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		return err == nil && exe == s.Path && Alive(pid)
	})
}
