package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// staleWait bounds how long a stale daemon gets after SIGTERM, and then after SIGKILL.
const staleWait = 5 * time.Second

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

// killStale kills the daemon d described by a previous run when its pidfile names a live
// process started with d's own --pidfile argument. The caller holds the directory lock, so such
// a process belongs to no live sandbox. It returns the pid it killed (0 for none).
func killStale(ctx context.Context, d *daemon, log *slog.Logger) (int, error) {
	data, err := os.ReadFile(d.pidfile)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stale %s: %w", d.name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return 0, nil // not a pidfile OVS wrote; OVS overwrites it
	}
	if !isOurs(pid, "--pidfile="+d.pidfile) {
		return 0, nil
	}
	log.Warn("sandbox: killing a leftover daemon of a previous run", "daemon", d.name, "pid", pid, "pidfile", d.pidfile)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if waitGone(ctx, pid, staleWait) {
		return pid, nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if waitGone(ctx, pid, staleWait) {
		return pid, nil
	}
	return pid, fmt.Errorf("stale %s pid %d (from %s) survives SIGKILL", d.name, pid, d.pidfile)
}

// isOurs reports whether pid is alive (not a zombie) and has arg on its command line.
func isOurs(pid int, arg string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !alive(pid) {
		return false
	}
	for _, a := range bytes.Split(cmdline, []byte{0}) {
		if string(a) == arg {
			return true
		}
	}
	return false
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S …": the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	return stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// waitGone polls until pid is gone, ctx ends or timeout passes; it reports whether it is gone.
func waitGone(ctx context.Context, pid int, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for alive(pid) {
		select {
		case <-ctx.Done():
			return !alive(pid)
		case <-tick.C:
		}
	}
	return true
}

// releaseWait bounds the wait for a dead daemon's last threads to exit and close its files.
const releaseWait = 10 * time.Second

// pidfileHolder returns the pid of the process holding the lock on an OVS pidfile, 0 when
// nobody holds it or the file does not exist. OVS daemons hold an fcntl write lock on their
// pidfile for as long as the process has its files open, which is also how OVS itself tells a
// stale pidfile from a live one.
func pidfileHolder(path string) (int, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pidfile %s: %w", path, err)
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("pidfile %s: F_GETLK: %w", path, err)
	}
	if lk.Type == syscall.F_UNLCK {
		return 0, nil
	}
	return int(lk.Pid), nil
}

// waitReleased waits until the daemon of a previous run named by d's pidfile has closed its
// files: a daemon killed with -9 (by its parent's death signal, or by killStale) looks dead as
// soon as its main thread is, but its other threads — DPDK's among them — may run on for a
// moment with its files open: its listening sockets (a new vswitchd then finds its vhost-user
// sockets still served and cannot bind them), its database lock. Done means: nobody holds the
// pidfile's lock, and the pidfile's process is gone or a zombie whose threads have all exited
// (the kernel releases the lock as it closes the files, but the sockets only after, just
// before the last thread becomes a zombie). A live process that merely got the pidfile's pid
// again is not waited for. It fails when that takes more than releaseWait.
func waitReleased(ctx context.Context, d *daemon) error {
	ctx, cancel := context.WithTimeout(ctx, releaseWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	pid := 0
	if data, err := os.ReadFile(d.pidfile); err == nil {
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	// The pidfile's process is the previous daemon when it holds the lock or is exiting; a
	// live process that does neither has only inherited its recycled pid.
	holder, err := pidfileHolder(d.pidfile)
	if err != nil {
		return err
	}
	ours := pid > 1 && (holder == pid || (!alive(pid) && threadsRunning(pid)))
	for {
		if holder == 0 && !(ours && threadsRunning(pid)) {
			return nil
		}
		select {
		case <-ctx.Done():
			if holder != 0 {
				return fmt.Errorf("%s: pid %d still holds %s: %w", d.name, holder, d.pidfile, context.Cause(ctx))
			}
			return fmt.Errorf("%s: threads of the exited pid %d still run: %w", d.name, pid, context.Cause(ctx))
		case <-tick.C:
		}
		if holder, err = pidfileHolder(d.pidfile); err != nil {
			return err
		}
	}
}

// threadsRunning reports whether any thread of process pid has not exited yet (is neither a
// zombie nor dead).
func threadsRunning(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, t := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X' {
			return true
		}
	}
	return false
}
