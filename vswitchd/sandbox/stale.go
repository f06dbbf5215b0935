package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrInUse is returned by Start when another live process holds the sandbox directory.
var ErrInUse = errors.New("sandbox directory in use")

// lockName is the lock file in the sandbox directory; it holds the owner's pid.
const lockName = "sandbox.lock"

// lockGrace is how long lockDir tries again a lock held by someone else.
const lockGrace = 2 * time.Second

// lockDir takes the exclusive flock on dir's lock file (waiting at most lockGrace) and records
// this process's pid in it. Closing the returned file releases the lock (so does the process's
// death). It fails with ErrInUse when the lock is held.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("sandbox lock: %w", err)
	}
	// A process forking at the moment (this one included: a sandbox starting ovs-vswitchd in a
	// new network namespace takes a while) holds a copy of every open file, the lock of a
	// just-closed sandbox included, until it execs: a held lock is tried again for lockGrace.
	deadline := time.Now().Add(lockGrace)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		holder, _ := os.ReadFile(path)
		f.Close()
		return nil, fmt.Errorf("%w: %s is held by pid %s (another ovsplaned runs this sandbox)",
			ErrInUse, path, orDefault(strings.TrimSpace(string(holder)), "unknown"))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
