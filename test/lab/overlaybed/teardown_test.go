//go:build linux

package overlaybed

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

// failHelperEnv makes TestFailingBedHelper build a bed and fail; only TestTeardownAfterFailure
// sets it, in the copy of the test binary it starts.
const failHelperEnv = "OVERLAYBED_FAIL_HELPER"

// TestFailingBedHelper is run by TestTeardownAfterFailure in a child test binary: it builds the
// short bed, prints its namespaces, uplinks and OVS daemons' pids, and fails. Run directly, it
// does nothing.
func TestFailingBedHelper(t *testing.T) {
	if os.Getenv(failHelperEnv) != "1" {
		return
	}
	b := New(t, Spec{Sites: ShortSites()})
	var names, pids []string
	for _, s := range b.Sites {
		names = append(names, s.NS.Name, s.Edge.Name, s.Uplink.Name)
		pids = append(pids, strconv.Itoa(s.DB.PID()), strconv.Itoa(s.Sw.PID()))
	}
	os.Stdout.WriteString("OVERLAYBED-NAMES " + strings.Join(names, " ") + "\n")
	os.Stdout.WriteString("OVERLAYBED-PIDS " + strings.Join(pids, " ") + "\n")
	t.Fatal("failing on purpose: the bed must still be torn down")
}

// TestTeardownAfterFailure runs a test that builds a bed and fails, in a child process, and
// checks that nothing of the bed is left: no namespace, no veth, no OVS daemon.
func TestTeardownAfterFailure(t *testing.T) {
	lab.Require(t, lab.NeedNetns, lab.NeedOVS)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFailingBedHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), failHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the failing helper test passed:\n%s", out)
	}
	var names, pids []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "OVERLAYBED-NAMES "); ok {
			names = strings.Fields(rest)
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "OVERLAYBED-PIDS "); ok {
			pids = strings.Fields(rest)
		}
	}
	if len(names) != 3*len(ShortSites()) || len(pids) != 2*len(ShortSites()) {
		t.Fatalf("the helper printed %d names and %d pids, want %d and %d:\n%s", len(names), len(pids),
			3*len(ShortSites()), 2*len(ShortSites()), out)
	}
	for i, n := range names {
		if i%3 == 2 {
			if o, err := exec.Command("ip", "-o", "link", "show", "dev", n).CombinedOutput(); err == nil {
				t.Errorf("interface %s left behind in the root namespace: %s", n, o)
			}
			continue
		}
		if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
			t.Errorf("namespace %s left behind by the failed test", n)
		}
	}
	for _, p := range pids {
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 {
			t.Errorf("bad pid %q from the helper", p)
			continue
		}
		// The pid may have been reused by then (pid_max can be small): only an OVS daemon counts.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			cmdline, _ := os.ReadFile("/proc/" + p + "/cmdline")
			if bytes.Contains(cmdline, []byte("ovsdb-server")) || bytes.Contains(cmdline, []byte("ovs-vswitchd")) {
				t.Errorf("OVS daemon pid %d still runs after the failed test: %q", pid, cmdline)
			}
		}
	}
}
