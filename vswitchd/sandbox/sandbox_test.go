//go:build linux

package sandbox

import (
	"bufio"
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
	"syscall"
	"testing"
	"time"

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
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir+"/")) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
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
		if err := s.Err(); err != nil {
			t.Errorf("Err() after Close = %v, want nil", err)
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
	lockDPDK(t)
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
}

// lockDPDK takes the lab's DPDK lock for the rest of the test: one DPDK vswitchd at a time
// across all test processes (one PMD thread and its hugepages are what the machine hosts).
func lockDPDK(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(lab.DPDKLockFile, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			_ = f.Truncate(0)
			_, _ = fmt.Fprintf(f, "pid %d, test %s\n", os.Getpid(), t.Name())
			return
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			t.Fatalf("lock %s: %v", lab.DPDKLockFile, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("lock %s: %v", lab.DPDKLockFile, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
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

func TestSecondStartIsRefused(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	dir := newDir(t)
	s := start(t, Options{Dir: dir, DPDK: DPDKOff})
	pids := processesIn(t, dir)
	if _, err := Start(t.Context(), Options{Dir: dir, DPDK: DPDKOff}); !errors.Is(err, ErrInUse) ||
		!strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Errorf("second Start = %v, want ErrInUse naming pid %d", err, os.Getpid())
	}
	if got := processesIn(t, dir); !equalInts(got, pids) {
		t.Errorf("processes before the second Start %v, after %v", pids, got)
	}
	vsctl(t, s, "show")
}

func equalInts(a, b []int) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestStaleDaemonIsKilled(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	dir := newDir(t)
	// A leftover ovsdb-server of a previous run: the sandbox's own command line, not a child of
	// any sandbox.
	opts, err := Options{Dir: dir}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	layout := newSandbox(opts, nil)
	if out, err := exec.Command("ovsdb-tool", "create", layout.dbPath, opts.Paths.Schema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	stale := exec.Command(layout.db.argv[0], layout.db.argv[1:]...)
	stale.Env = append(os.Environ(), layout.env...)
	stale.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := stale.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- stale.Wait() }()
	t.Cleanup(func() { _ = stale.Process.Kill() })
	lab.WaitFor(t, waitLimit, "the stale ovsdb-server's pidfile", func(context.Context) error {
		data, err := os.ReadFile(layout.db.pidfile)
		if err == nil && strings.TrimSpace(string(data)) != strconv.Itoa(stale.Process.Pid) {
			err = fmt.Errorf("pidfile says %q", data)
		}
		return err
	})

	s := start(t, Options{Dir: dir, DPDK: DPDKOff})
	select {
	case err := <-exited:
		t.Logf("stale ovsdb-server pid %d: %v", stale.Process.Pid, err)
	default:
		t.Fatalf("stale ovsdb-server pid %d still runs after Start", stale.Process.Pid)
	}
	vsctl(t, s, "show")
}

// ownerEnv makes the test binary run TestSandboxOwnerProcess as the stand-in for ovsplaned.
const ownerEnv = "SANDBOX_TEST_OWNER_DIR"

// TestSandboxOwnerProcess is not a test on its own: TestKillNineTakesTheDaemons runs the test
// binary with ownerEnv set, and this function then starts a sandbox, prints its daemons' pids
// and waits to be killed.
func TestSandboxOwnerProcess(t *testing.T) {
	dir := os.Getenv(ownerEnv)
	if dir == "" {
		return // only meaningful as TestKillNineTakesTheDaemons's child
	}
	s, err := Start(t.Context(), Options{Dir: dir, DPDK: DPDKOff})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("pids %d %d\n", s.dbProc.pid, s.swProc.pid)
	time.Sleep(5 * time.Minute)
	os.Exit(3)
}

func TestKillNineTakesTheDaemons(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	dir := newDir(t)
	owner := exec.Command(os.Args[0], "-test.run=^TestSandboxOwnerProcess$", "-test.count=1")
	owner.Env = append(os.Environ(), ownerEnv+"="+dir)
	owner.Stderr = os.Stderr
	stdout, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var dbPID, swPID int
	if _, serr := fmt.Sscanf(line, "pids %d %d", &dbPID, &swPID); serr != nil {
		t.Fatalf("owner process said %q (%v)", line, err)
	}
	if !alive(dbPID) || !alive(swPID) {
		t.Fatalf("daemons %d, %d not running under the owner", dbPID, swPID)
	}

	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	lab.WaitFor(t, waitLimit, "the daemons to die with their owner", func(context.Context) error {
		if alive(dbPID) || alive(swPID) {
			return fmt.Errorf("ovsdb-server %d alive %v, ovs-vswitchd %d alive %v", dbPID, alive(dbPID), swPID, alive(swPID))
		}
		return nil
	})
	// The kernel released the owner's lock: the next run starts without leftovers.
	s := start(t, Options{Dir: dir, DPDK: DPDKOff})
	vsctl(t, s, "show")
}

// fakeVswitchd writes an executable script standing in for ovs-vswitchd and returns its path.
func fakeVswitchd(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-vswitchd")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStartFailureQuotesTheLog(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	dir := newDir(t)
	bin := fakeVswitchd(t, `echo "fake-vswitchd: no datapath for you" >&2; exit 3`)
	_, err := Start(t.Context(), Options{Dir: dir, DPDK: DPDKOff, Paths: Paths{Vswitchd: bin}})
	if err == nil {
		t.Fatal("Start succeeded with a vswitchd that exits")
	}
	for _, want := range []string{"ovs-vswitchd", "exit status 3", "fake-vswitchd: no datapath for you"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	assertNoProcesses(t, dir)
}

func TestStartIsBoundedAndCancellable(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedRoot)
	// A vswitchd that never applies anything; it says when it runs.
	hang := func(t *testing.T, marker string) string {
		return fakeVswitchd(t, "touch "+marker+"\nwhile :; do sleep 0.1; done")
	}
	t.Run("timeout", func(t *testing.T) {
		dir := newDir(t)
		opts := Options{Dir: dir, DPDK: DPDKOff, StartTimeout: 3 * time.Second,
			Paths: Paths{Vswitchd: hang(t, filepath.Join(t.TempDir(), "ran"))}}
		_, err := Start(t.Context(), opts)
		if err == nil || !strings.Contains(err.Error(), "start-up took longer than 3s") {
			t.Errorf("Start = %v, want the start-up bound named", err)
		}
		assertNoProcesses(t, dir)
	})
	t.Run("cancel", func(t *testing.T) {
		dir := newDir(t)
		marker := filepath.Join(t.TempDir(), "ran")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() {
			defer cancel()
			for ctx.Err() == nil {
				if _, err := os.Stat(marker); err == nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		_, err := Start(ctx, Options{Dir: dir, DPDK: DPDKOff, Paths: Paths{Vswitchd: hang(t, marker)}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Start = %v, want context.Canceled", err)
		}
		assertNoProcesses(t, dir)
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		dir := newDir(t)
		if _, err := Start(ctx, Options{Dir: dir}); !errors.Is(err, context.Canceled) {
			t.Errorf("Start = %v, want context.Canceled", err)
		}
		assertNoProcesses(t, dir)
	})
}
