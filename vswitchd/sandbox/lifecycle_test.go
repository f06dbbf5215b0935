//go:build linux

package sandbox

// Lifecycle tests with real processes: a second owner, stale daemons, kill -9 of the owner,
// failing, hanging and cancelled starts.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/test/lab"
)

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
	if out, err := exec.Command("ovsdb-tool", "create", layout.layout.DBPath(), opts.Paths.Schema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	argv := layout.db.Spec().Argv
	stale := exec.Command(argv[0], argv[1:]...)
	stale.Env = append(os.Environ(), layout.env...)
	stale.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := stale.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- stale.Wait() }()
	t.Cleanup(func() { _ = stale.Process.Kill() })
	lab.WaitFor(t, waitLimit, "the stale ovsdb-server's pidfile", func(context.Context) error {
		data, err := os.ReadFile(layout.db.Spec().Pidfile)
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
	fmt.Printf("pids %d %d\n", s.db.Current().PID(), s.sw.Current().PID())
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
	if !ovsproc.Alive(dbPID) || !ovsproc.Alive(swPID) {
		t.Fatalf("daemons %d, %d not running under the owner", dbPID, swPID)
	}

	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	lab.WaitFor(t, waitLimit, "the daemons to die with their owner", func(context.Context) error {
		if ovsproc.Alive(dbPID) || ovsproc.Alive(swPID) {
			return fmt.Errorf("ovsdb-server %d alive %v, ovs-vswitchd %d alive %v", dbPID, ovsproc.Alive(dbPID), swPID, ovsproc.Alive(swPID))
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
