//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// These tests start real ovsdb-server and ovs-vswitchd(-dpdk) processes. lab.Require skips
// them without root or OVS, or fails them when OVSPLANE_REQUIRE_LAB=1 (as `make test` sets
// for root).

// waitLimit bounds every wait of these tests for something that should happen soon.
const waitLimit = 30 * time.Second

// newDir returns a new short directory (unix socket paths are limited) removed at cleanup.
func newDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ovsbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// start starts a sandbox and closes it at cleanup.
func start(t *testing.T, opts Options) *Sandbox {
	t.Helper()
	s, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Logf("%s", s.Describe())
	return s
}

// vsctl runs ovs-vsctl against s (waiting for ovs-vswitchd, as ovs-vsctl does by default, on
// modifying commands) and fails the test on error.
func vsctl(t *testing.T, s *Sandbox, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ovs-vsctl", append([]string{"--db=" + s.Endpoint()}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		t.Fatalf("ovs-vsctl %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// processesIn returns the live processes whose command line mentions dir.
func processesIn(t *testing.T, dir string) []int {
	t.Helper()
	self := os.Getpid()
	return testkit.PIDs(t, func(pid int) bool {
		if pid == self {
			return false
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		return err == nil && bytes.Contains(cmdline, []byte(dir+"/")) && ovsproc.Alive(pid)
	})
}

// assertNoProcesses fails the test when a process still runs with dir on its command line.
func assertNoProcesses(t *testing.T, dir string) {
	t.Helper()
	if pids := processesIn(t, dir); len(pids) > 0 {
		t.Errorf("processes still running for %s: %v", dir, pids)
	}
}

// randomName returns prefix followed by n random lower-case letters.
func randomName(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = 'a' + b[i]%26
	}
	return prefix + string(b)
}

// linkInNetns runs `ip link show dev` for dev in the network namespace of process pid.
func linkInNetns(ctx context.Context, pid int, dev string) error {
	return exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(pid), "-n", "ip", "link", "show", "dev", dev).Run()
}

func TestSandboxUserspace(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	dir := newDir(t)
	br := randomName("sbx", 8)
	s := start(t, Options{Dir: dir, DPDK: DPDKOff})
	if s.DPDK() {
		t.Error("DPDK() = true with DPDKOff")
	}
	if s.Dir() != dir || s.Endpoint() != "unix:"+dir+"/db.sock" {
		t.Errorf("Dir() = %q, Endpoint() = %q", s.Dir(), s.Endpoint())
	}
	for _, want := range []string{s.Endpoint(), "ovs-vswitchd (Open vSwitch)", "DPDK off as asked", "private network namespace"} {
		if d := s.Describe(); !strings.Contains(d, want) {
			t.Errorf("Describe() = %q, want it to mention %q", d, want)
		}
	}

	t.Run("the database answers", func(t *testing.T) {
		out := vsctl(t, s, "show")
		if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n`).MatchString(out + "\n") {
			t.Errorf("ovs-vsctl show = %q, want the Open_vSwitch row's UUID first", out)
		}
	})
	t.Run("ovs-vswitchd applies a change", func(t *testing.T) {
		vsctl(t, s, "add-br", br, "--", "set", "Bridge", br, "datapath_type=netdev")
		next, cur := vsctl(t, s, "get", "Open_vSwitch", ".", "next_cfg"), vsctl(t, s, "get", "Open_vSwitch", ".", "cur_cfg")
		if next != cur {
			t.Errorf("after add-br: next_cfg %s, cur_cfg %s", next, cur)
		}
		if of := vsctl(t, s, "get", "Interface", br, "ofport"); of != "65534" {
			t.Errorf("bridge %s local port ofport = %s, want 65534", br, of)
		}
	})
	t.Run("its devices stay in its namespace", func(t *testing.T) {
		if err := linkInNetns(t.Context(), s.VswitchdPID(), br); err != nil {
			t.Errorf("bridge device %s not in the vswitchd's namespace: %v", br, err)
		}
		if err := exec.CommandContext(t.Context(), "ip", "link", "show", "dev", br).Run(); err == nil {
			t.Errorf("bridge device %s appeared in the host's namespace", br)
		}
	})
	t.Run("Close leaves no process and keeps the database", func(t *testing.T) {
		if err := s.Close(t.Context()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case <-s.Done():
		default:
			t.Error("Done() not closed after Close")
		}
		assertNoProcesses(t, dir)
		if _, err := os.Stat(filepath.Join(dir, "conf.db")); err != nil {
			t.Errorf("database gone after Close: %v", err)
		}
	})
	t.Run("a restart keeps the bridge", func(t *testing.T) {
		s2 := start(t, Options{Dir: dir, DPDK: DPDKOff})
		vsctl(t, s2, "br-exists", br)
		// Start waited until the new vswitchd applied the database, bridge included.
		if of := vsctl(t, s2, "get", "Interface", br, "ofport"); of != "65534" {
			t.Errorf("after restart: bridge %s ofport = %s, want 65534", br, of)
		}
	})
}

func TestSandboxDPDK(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedDPDK)
	lab.LockDPDK(t)
	dir := newDir(t)
	s := start(t, Options{Dir: dir, DPDK: DPDKOn})
	if !s.DPDK() {
		t.Fatal("DPDK() = false with DPDKOn")
	}
	if d := s.Describe(); !strings.Contains(d, "ovs-vswitchd-dpdk") || !strings.Contains(d, "with DPDK") {
		t.Errorf("Describe() = %q, want it to name ovs-vswitchd-dpdk and its DPDK", d)
	}
	if got := vsctl(t, s, "get", "Open_vSwitch", ".", "dpdk_initialized"); got != "true" {
		t.Errorf("dpdk_initialized = %s", got)
	}
	if got := vsctl(t, s, "get", "Open_vSwitch", ".", "other_config:pmd-maxsleep"); got != `"1000"` {
		t.Errorf("other_config:pmd-maxsleep = %s, want the sandbox's default", got)
	}
	// A vhost-user client port exists only in the DPDK build; nobody serves the socket, OVS
	// keeps retrying, but the port gets an ofport.
	vsctl(t, s, "add-br", "br-dpdk", "--", "set", "Bridge", "br-dpdk", "datapath_type=netdev",
		"--", "add-port", "br-dpdk", "vhu0", "--", "set", "Interface", "vhu0", "type=dpdkvhostuserclient",
		"options:vhost-server-path="+filepath.Join(dir, "vhu0.sock"))
	if of, err := strconv.Atoi(vsctl(t, s, "get", "Interface", "vhu0", "ofport")); err != nil || of <= 0 {
		t.Errorf("vhu0 ofport = %d (%v), want a port number; error column: %s", of, err,
			vsctl(t, s, "get", "Interface", "vhu0", "error"))
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	assertNoProcesses(t, dir)

	// ovsplaned's case: its configuration owns dpdk-init and dpdk-socket-mem. The sandbox hands
	// over the values it wrote above, starts the DPDK build, and DPDK initialises once the
	// caller writes its dpdk-init.
	desired := map[string]string{"dpdk-init": "true", "dpdk-socket-mem": "1024"}
	s2 := start(t, Options{Dir: dir, DPDK: DPDKOn, DesiredOtherConfig: desired})
	if !s2.DPDK() || !strings.Contains(s2.Describe(), "once the desired dpdk-init is written") {
		t.Errorf("DPDK() = %v, Describe() = %q; want DPDK pending the caller's dpdk-init", s2.DPDK(), s2.Describe())
	}
	for k := range desired {
		if got := vsctl(t, s2, "--if-exists", "get", "Open_vSwitch", ".", "other_config:"+k); got != "" {
			t.Errorf("other_config:%s = %s after the hand-over, want it absent", k, got)
		}
	}
	vsctl(t, s2, "--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true", "other_config:dpdk-socket-mem=1024")
	vsctl(t, s2, "wait-until", "Open_vSwitch", ".", "dpdk_initialized=true")
	lab.WaitFor(t, waitLimit, "vhu0 to get its ofport back", func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "ovs-vsctl", "--db="+s2.Endpoint(), "get", "Interface", "vhu0", "ofport").Output()
		if of, _ := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || of <= 0 {
			return fmt.Errorf("ofport %q (%v)", out, err)
		}
		return nil
	})
}

func TestDesiredOtherConfigIsLeftToTheCaller(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	dir := newDir(t)
	s := start(t, Options{Dir: dir, DPDK: DPDKOff})
	if got := vsctl(t, s, "get", "Open_vSwitch", ".", "other_config:pmd-maxsleep"); got != `"1000"` {
		t.Errorf("other_config:pmd-maxsleep = %s, want the sandbox's default", got)
	}
	if got := vsctl(t, s, "get", "Open_vSwitch", ".", "external_ids:"+recordKey); got != "pmd-maxsleep" {
		t.Errorf("record = %s, want pmd-maxsleep", got)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	s2 := start(t, Options{Dir: dir, DPDK: DPDKOff, DesiredOtherConfig: map[string]string{"pmd-maxsleep": "500"}})
	if got := vsctl(t, s2, "--if-exists", "get", "Open_vSwitch", ".", "other_config:pmd-maxsleep"); got != "" {
		t.Errorf("other_config:pmd-maxsleep = %s, want it left to the caller", got)
	}
	if got := vsctl(t, s2, "--if-exists", "get", "Open_vSwitch", ".", "external_ids:"+recordKey); got != "" {
		t.Errorf("record = %s, want none", got)
	}
}

func TestAutoWithoutFreeHugepages(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	meminfo := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(meminfo, []byte("HugePages_Total: 1024\nHugePages_Free: 0\nHugepagesize: 2048 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("auto falls back to the userspace datapath", func(t *testing.T) {
		s := start(t, Options{Dir: newDir(t), Paths: Paths{Meminfo: meminfo}})
		if s.DPDK() {
			t.Error("DPDK() = true without free hugepages")
		}
		if d := s.Describe(); !strings.Contains(d, "no DPDK: 0 MiB of hugepages free") {
			t.Errorf("Describe() = %q, want it to say why there is no DPDK", d)
		}
		if got := vsctl(t, s, "get", "Open_vSwitch", ".", "dpdk_initialized"); got != "false" {
			t.Errorf("dpdk_initialized = %s", got)
		}
	})
	t.Run("on refuses", func(t *testing.T) {
		dir := newDir(t)
		_, err := Start(t.Context(), Options{Dir: dir, DPDK: DPDKOn, Paths: Paths{Meminfo: meminfo}})
		if !errors.Is(err, errNoDPDK) || !strings.Contains(err.Error(), "hugepages") {
			t.Errorf("Start = %v, want a refusal about hugepages", err)
		}
		assertNoProcesses(t, dir)
	})
}
