//go:build linux

package lab_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// leftovers lists what a finished lab must no longer have on the machine.
type leftovers struct {
	dirs  []string // directories
	netns []string // namespace names
	links []string // interfaces of the test's own namespace
	pids  []int    // processes
}

// assertGone fails t for each leftover that still exists.
func assertGone(t *testing.T, l leftovers) {
	t.Helper()
	if len(l.dirs)+len(l.netns)+len(l.links)+len(l.pids) == 0 {
		t.Fatal("nothing recorded to check: the lab subtest did not get far enough")
	}
	for _, d := range l.dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("directory %s still exists (stat: %v)", d, err)
		}
	}
	for _, n := range l.netns {
		if _, err := os.Stat(filepath.Join("/run/netns", n)); !os.IsNotExist(err) {
			t.Errorf("netns %s still exists (stat: %v)", n, err)
		}
	}
	for _, link := range l.links {
		if _, err := os.Stat(filepath.Join("/sys/class/net", link)); !os.IsNotExist(err) {
			t.Errorf("interface %s still exists (stat: %v)", link, err)
		}
	}
	for _, pid := range l.pids {
		if alive(pid) {
			t.Errorf("process %d still runs: %s", pid, cmdline(pid))
		}
	}
}

// alive reports whether pid exists and is not a zombie, waiting up to a second for it to go.
func alive(pid int) bool {
	deadline := time.Now().Add(time.Second)
	for ovsproc.Alive(pid) {
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// cmdline returns pid's command line for messages.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// cpuSeconds returns the user+system CPU time pid has used so far.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("read stat of pid %d: %v", pid, err)
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+2:]))   // f[0] is field 3 (state)
	utime, _ := strconv.ParseFloat(f[11], 64) // field 14
	stime, _ := strconv.ParseFloat(f[12], 64) // field 15
	const userHZ = 100                        // USER_HZ is 100 on every Linux the lab runs on
	return (utime + stime) / userHZ
}
