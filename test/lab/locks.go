//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// Lock files that serialise lab daemons across all test processes of the machine. Each holds
// the pid and test name of its current holder. When both are needed, DPDKLockFile is taken
// first.
const (
	// DPDKLockFile admits one DPDK vswitchd at a time: a two-CPU machine has room for one PMD
	// thread and one set of hugepages.
	DPDKLockFile = "/tmp/ovsplane-lab-dpdk.lock"
	// RootNetdevLockFile admits one userspace-datapath vswitchd (Userspace or DPDK) at a time
	// in the root network namespace: such a vswitchd creates a tap device named "ovs-netdev"
	// there, and a second one fails with "creating tap device failed: Device or resource busy".
	// ovs-vswitchds given their own OVSVswitchdSpec.Netns do not take it.
	RootNetdevLockFile = "/tmp/ovsplane-lab-root-netdev.lock"
)

// LockDPDK takes DPDKLockFile for the rest of the test: one DPDK vswitchd at a time on the
// machine. It is for tests that start a DPDK ovs-vswitchd of their own (a sandbox);
// StartOVSVswitchd takes the lock itself.
func LockDPDK(t testing.TB) {
	t.Helper()
	lockExclusive(t, DPDKLockFile, "one DPDK vswitchd at a time")
}

// lockWait bounds the wait for a lock when the test has no deadline.
const lockWait = 5 * time.Minute

// lockExclusive takes the flock on path for the rest of the test, waiting for other holders at
// most until 30 s before the test's deadline (or lockWait). why explains the lock in messages.
// The returned release gives the lock up earlier (a flock is per open file, so the same
// process taking it again waits like any other holder); calling it again, or the test's
// cleanup after it, does nothing.
func lockExclusive(t testing.TB, path, why string) (release func()) {
	t.Helper()
	deadline := time.Now().Add(lockWait)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			deadline = dl.Add(-30 * time.Second)
		}
	}
	ctx, cancel := testContext(t, time.Until(deadline))
	defer cancel()
	logged := false
	var f *os.File
	err := ovsproc.Poll(ctx, func(context.Context) error {
		var err error
		f, err = lockFile(path, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil && errors.Is(err, syscall.EWOULDBLOCK) && !logged {
			logged = true
			t.Logf("lab: %s: waiting for %s, held by %s", why, path, lockHolder(path))
		}
		return err
	})
	if err != nil {
		t.Fatalf("lab: %s: %v (holder: %s)", why, err, lockHolder(path))
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = f.Truncate(0)
			f.Close()
		})
	}
	t.Cleanup(release)
	if err := f.Truncate(0); err == nil {
		_, _ = fmt.Fprintf(f, "pid %d, test %s\n", os.Getpid(), t.Name())
	}
	return release
}

// lockHolder describes who holds the lock at path, as recorded in the file.
func lockHolder(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return "an unknown process"
	}
	return strings.TrimSpace(string(data))
}
