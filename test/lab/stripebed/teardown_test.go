//go:build linux

package stripebed

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

// failHelperEnv makes TestFailingBedHelper build a bed and fail; only TestTeardownAfterFailure
// sets it, in the copy of the test binary it starts.
const failHelperEnv = "STRIPEBED_FAIL_HELPER"

// TestFailingBedHelper is run by TestTeardownAfterFailure in a child test binary: it builds a
// bed, prints the names of its namespaces and interfaces, and fails. Run directly, it does
// nothing.
func TestFailingBedHelper(t *testing.T) {
	if os.Getenv(failHelperEnv) != "1" {
		return
	}
	b := New(t, Spec{RatesMbit: []int{100, 200}})
	names := []string{b.A.Name, b.B.Name}
	for _, l := range b.Links {
		names = append(names, l.A.Name, l.B.Name)
	}
	os.Stdout.WriteString("STRIPEBED-NAMES " + strings.Join(names, " ") + "\n")
	t.Fatal("failing on purpose: the bed must still be torn down")
}

// TestTeardownAfterFailure runs a test that builds a bed and fails, in a child process, and
// checks that nothing of the bed is left: no namespace, no veth.
func TestTeardownAfterFailure(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFailingBedHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), failHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the failing helper test passed:\n%s", out)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "STRIPEBED-NAMES "); ok {
			names = strings.Fields(rest)
		}
	}
	if len(names) != 6 {
		t.Fatalf("the helper printed %d names, want 6 (2 namespaces, 2 links × 2 ends):\n%s", len(names), out)
	}
	for _, n := range names[:2] {
		if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
			t.Errorf("namespace %s left behind by the failed test", n)
		}
	}
	for _, n := range names[2:] {
		if o, err := exec.Command("ip", "-o", "link", "show", "dev", n).CombinedOutput(); err == nil {
			t.Errorf("interface %s left behind in the root namespace: %s", n, o)
		}
	}
}
