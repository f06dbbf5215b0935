//go:build linux

package lab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Hugepage settings of the lab.
const (
	// DPDKHugepages is how many 2 MiB pages Require(t, NeedDPDK) reserves when it has to:
	// 2 GiB, room for one DPDK vswitchd (DefaultSocketMemMB) and a vhost-user peer process.
	DPDKHugepages = 1024
	// HugepagesMount is where EnsureHugepages mounts hugetlbfs.
	HugepagesMount = "/dev/hugepages"

	hugepages2M   = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
	hugepagesLock = "/tmp/ovsplane-lab-hugepages.lock"
)

// EnsureHugepages makes at least minPages 2 MiB hugepages reserved and hugetlbfs mounted on
// HugepagesMount. It never lowers the reservation and is idempotent; concurrent callers in
// several processes are serialised with an flock. It needs root, and fails when the kernel
// cannot find enough contiguous memory for the pages (it then says how many it got).
// (OVS adds --in-memory to DPDK's arguments, so OVS itself runs without the mount; DPDK
// programs started without --in-memory need it.)
func EnsureHugepages(minPages int) error {
	lock, err := lockFile(hugepagesLock, syscall.LOCK_EX)
	if err != nil {
		return fmt.Errorf("ensure hugepages: %w", err)
	}
	defer lock.Close()
	have, err := readInt(hugepages2M)
	if err != nil {
		return fmt.Errorf("ensure hugepages: %w", err)
	}
	if have < minPages {
		if err := os.WriteFile(hugepages2M, []byte(strconv.Itoa(minPages)), 0o644); err != nil {
			return fmt.Errorf("ensure hugepages: reserve %d pages: %w", minPages, err)
		}
		if have, err = readInt(hugepages2M); err != nil {
			return fmt.Errorf("ensure hugepages: %w", err)
		}
		if have < minPages {
			return fmt.Errorf("ensure hugepages: asked the kernel for %d pages of 2 MiB, got %d "+
				"(memory too fragmented; reserve them at boot with hugepages=%d)", minPages, have, minPages)
		}
	}
	return mountHugetlbfs()
}

// mountHugetlbfs mounts hugetlbfs on HugepagesMount unless one is already mounted there.
func mountHugetlbfs() error {
	mounted, err := isHugetlbfsMounted(HugepagesMount)
	if err != nil || mounted {
		return err
	}
	if err := os.MkdirAll(HugepagesMount, 0o755); err != nil {
		return fmt.Errorf("mount hugetlbfs: %w", err)
	}
	if err := syscall.Mount("none", HugepagesMount, "hugetlbfs", 0, ""); err != nil {
		return fmt.Errorf("mount hugetlbfs on %s: %w", HugepagesMount, err)
	}
	return nil
}

// isHugetlbfsMounted reports whether /proc/self/mounts lists hugetlbfs on dir.
func isHugetlbfsMounted(dir string) (bool, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return false, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[1] == dir && fields[2] == "hugetlbfs" {
			return true, nil
		}
	}
	return false, sc.Err()
}

// readInt reads a file holding one decimal integer.
func readInt(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}

// lockFile opens (creating) path and takes an flock on it with how (LOCK_EX, optionally
// |LOCK_NB). Closing the returned file releases the lock.
func lockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
