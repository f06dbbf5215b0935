package ovsproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// probeTimeout bounds the connect that tells a live unix socket from a stale one.
const probeTimeout = time.Second

// soAcceptCon is __SO_ACCEPTCON, the flag /proc/net/unix shows on listening sockets.
const soAcceptCon = 0x10000

// RemoveStaleSockets removes the unix socket files directly in dirs (not below) on which no
// process listens, and returns their paths. Run it before ovs-vswitchd starts: the sockets of
// dpdkvhostuser ports (server mode, ovs-vswitchd creates and listens on them) outlive a
// vswitchd killed with -9, and DPDK then fails to bind them ("Address already in use"): the
// port stays at ofport -1, and the failed socket's file descriptor number, closed by DPDK and
// reused at once, is likely closed a second time when the port is torn down — closing the
// vswitchd's own unixctl or OVSDB connection ("Bad file descriptor", ovs-appctl reads end of
// file). ovs-vswitchd's own stale sockets (<bridge>.mgmt, its unixctl socket) go too; it would
// remove them itself.
//
// A socket counts as listened on when /proc/net/unix (this network namespace) lists a
// listening socket bound to its path, or, failing that, when a connect to it does not fail with
// ECONNREFUSED (a listener in another namespace; the connection is closed at once). So the
// socket of a dpdkvhostuserclient port's VM side (it listens, ovs-vswitchd connects) stays as
// long as the VM side runs. Regular files, directories and symbolic links are never removed;
// a missing directory is not an error. Sockets it cannot judge are kept and logged as warnings
// on log; the errors of the directories it cannot read or the files it cannot remove are
// joined.
func RemoveStaleSockets(ctx context.Context, dirs []string, log *slog.Logger) ([]string, error) {
	listening, err := listeningPaths()
	if err != nil {
		log.Warn("stale sockets: cannot read the listening unix sockets; probing each socket", "error", err)
		listening = map[string]bool{}
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("stale sockets in %s: %w", dir, err))
			continue
		}
		for _, e := range entries {
			if e.Type()&fs.ModeSocket == 0 { // never a file, directory or symlink
				continue
			}
			path := filepath.Join(dir, e.Name())
			if listening[path] {
				continue
			}
			stale, err := refused(ctx, path)
			if err != nil {
				log.Warn("stale sockets: cannot tell whether a socket is in use; keeping it", "socket", path, "error", err)
				continue
			}
			if !stale {
				continue
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove stale socket %s: %w", path, err))
				continue
			}
			removed = append(removed, path)
		}
	}
	return removed, errors.Join(errs...)
}

// refused reports whether connecting to the unix socket at path fails with ECONNREFUSED, the
// answer of a socket file no process listens on. A successful connection (closed at once)
// means false; other errors are returned.
func refused(ctx context.Context, path string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err == nil {
		c.Close()
		return false, nil
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true, nil
	}
	return false, err
}

// listeningPaths returns the paths of the listening unix sockets of this network namespace.
func listeningPaths() (map[string]bool, error) {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseProcNetUnix(f)
}

// parseProcNetUnix reads /proc/net/unix's format ("Num RefCount Protocol Flags Type St Inode
// Path", hexadecimal flags) and returns the paths of sockets with __SO_ACCEPTCON (listening).
// Abstract sockets ("@name") and unbound ones are left out.
func parseProcNetUnix(r io.Reader) (map[string]bool, error) {
	paths := map[string]bool{}
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		flags, err := strconv.ParseUint(fields[3], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("/proc/net/unix: flags %q: %w", fields[3], err)
		}
		path := strings.Join(fields[7:], " ")
		if flags&soAcceptCon != 0 && strings.HasPrefix(path, "/") {
			paths[path] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/proc/net/unix: %w", err)
	}
	return paths, nil
}
