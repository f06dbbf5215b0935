package ovsproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// staleWait bounds how long a stale daemon gets after SIGTERM, and then after SIGKILL.
const staleWait = 5 * time.Second

// releaseWait bounds the wait for a dead daemon's last threads to exit and close its files.
const releaseWait = 10 * time.Second

// KillStale kills the daemon of spec left by a previous run: the process spec.Pidfile names,
// when it is alive and its command line carries spec's very --pidfile= argument (so a recycled
// pid of an unrelated program is never signalled). It sends SIGTERM, then SIGKILL, waiting up
// to 5 s after each. The caller must know that no live owner uses the daemon (say, it holds the
// directory's lock). It returns the pid it killed (0 for none), and an error when the pidfile
// cannot be read or the process survives SIGKILL.
func KillStale(ctx context.Context, spec Spec) (int, error) {
	data, err := os.ReadFile(spec.Pidfile)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stale %s: %w", spec.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return 0, nil // not a pidfile OVS wrote; OVS overwrites it
	}
	if !IsOurs(pid, "--pidfile="+spec.Pidfile) {
		return 0, nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if waitGone(ctx, pid, staleWait) {
		return pid, nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if waitGone(ctx, pid, staleWait) {
		return pid, nil
	}
	return pid, fmt.Errorf("stale %s pid %d (from %s) survives SIGKILL", spec.Name, pid, spec.Pidfile)
}

// IsOurs reports whether pid is alive (not a zombie) and has arg on its command line.
func IsOurs(pid int, arg string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !Alive(pid) {
		return false
	}
	for _, a := range bytes.Split(cmdline, []byte{0}) {
		if string(a) == arg {
			return true
		}
	}
	return false
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	return running(stat)
}

// running reports whether a /proc/…/stat line shows a state other than zombie or dead. The
// state follows the last ')': "pid (comm) S …".
func running(stat []byte) bool {
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
	for Alive(pid) {
		select {
		case <-ctx.Done():
			return !Alive(pid)
		case <-tick.C:
		}
	}
	return true
}

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

// WaitReleased waits until the daemon of a previous run named by spec.Pidfile has closed its
// files: a daemon killed with -9 (by its parent's death signal, or by KillStale) looks dead as
// soon as its main thread is, but its other threads — DPDK's among them — may run on for a
// moment with its files open: its listening sockets (a new vswitchd then finds its vhost-user
// sockets still served and cannot bind them), its database lock. Done means: nobody holds the
// pidfile's lock, and the pidfile's process is gone or a zombie whose threads have all exited
// (the kernel releases the lock as it closes the files, but the sockets only after, just
// before the last thread becomes a zombie). A live process that merely got the pidfile's pid
// again is not waited for. It fails when that takes more than 10 s or ctx ends.
func WaitReleased(ctx context.Context, spec Spec) error {
	ctx, cancel := context.WithTimeout(ctx, releaseWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	pid := 0
	if data, err := os.ReadFile(spec.Pidfile); err == nil {
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	// The pidfile's process is the previous daemon when it holds the lock or is exiting; a
	// live process that does neither has only inherited its recycled pid.
	holder, err := pidfileHolder(spec.Pidfile)
	if err != nil {
		return err
	}
	ours := pid > 1 && (holder == pid || (!Alive(pid) && threadsRunning(pid)))
	for {
		if holder == 0 && !(ours && threadsRunning(pid)) {
			return nil
		}
		select {
		case <-ctx.Done():
			if holder != 0 {
				return fmt.Errorf("%s: pid %d still holds %s: %w", spec.Name, holder, spec.Pidfile, context.Cause(ctx))
			}
			return fmt.Errorf("%s: threads of the exited pid %d still run: %w", spec.Name, pid, context.Cause(ctx))
		case <-tick.C:
		}
		if holder, err = pidfileHolder(spec.Pidfile); err != nil {
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
		if err == nil && running(stat) {
			return true
		}
	}
	return false
}
