package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
)

// TestDetectCommand: --detect prints the Detect report of a simulated host as text (PFs, VFs,
// modes with reasons) and as JSON; misuse is exit status 2.
func TestDetectCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if rc := runCLI([]string{"--detect", "--simulate", switchdevFixture}, &out, &errOut); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut.String())
	}
	for _, want := range []string{"SIMULATED host", "PF 0000:65:00.0", "VF 1 0000:65:00.3: driver mlx5_core, representor enp101s0f0npf0vf1",
		"  kernel: ok", "  ovs-fork: no", "OVS_NO_DPDKVDPA"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "NO HARDWARE IS TOUCHED") {
		t.Errorf("no simulation warning: %s", errOut.String())
	}
	out.Reset()
	if rc := runCLI([]string{"--detect", "--json", "--simulate", "../../vdpa/testdata/cx6dx-nomodules.fixture"}, &out, &errOut); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut.String())
	}
	var r vdpa.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if r.Kernel.VDPANetlink.OK || r.Kernel.VDPANetlink.Why[0].Code != vdpa.CodeNoNetlink || len(r.PFs) == 0 {
		t.Errorf("report %+v", r.Kernel)
	}
	for _, args := range [][]string{{}, {"--json"}, {"--detect", "extra"}, {"--bogus"}} {
		if rc := runCLI(args, &out, &errOut); rc != 2 {
			t.Errorf("%v: exit %d, want 2", args, rc)
		}
	}
	if rc := runCLI([]string{"--detect", "--simulate", "/nonexistent.fixture"}, &out, &errOut); rc != 1 {
		t.Errorf("missing fixture: exit %d, want 1", rc)
	}
}

// lockedWriter serialises writes from the host's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// String returns what was written so far.
func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
