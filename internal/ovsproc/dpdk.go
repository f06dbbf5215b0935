package ovsproc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// DefaultMeminfo is where ReadHugepages looks by default.
const DefaultMeminfo = "/proc/meminfo"

// Hugepages is what /proc/meminfo says about the hugepages of the default size.
type Hugepages struct {
	Total, Free int64 // pages reserved (vm.nr_hugepages) and free
	PageBytes   int64 // the default page size
}

// FreeMB returns the free hugepage memory in MiB.
func (h Hugepages) FreeMB() int64 { return h.Free * h.PageBytes >> 20 }

// TotalMB returns the reserved hugepage memory in MiB.
func (h Hugepages) TotalMB() int64 { return h.Total * h.PageBytes >> 20 }

// ReadHugepages parses the meminfo file at path (DefaultMeminfo) with ParseMeminfo.
func ReadHugepages(path string) (Hugepages, error) {
	f, err := os.Open(path)
	if err != nil {
		return Hugepages{}, err
	}
	defer f.Close()
	return ParseMeminfo(f)
}

// ParseMeminfo reads HugePages_Total, HugePages_Free and Hugepagesize from /proc/meminfo's
// format. A kernel without hugetlbfs has none of them: zero pages, no error.
func ParseMeminfo(r io.Reader) (Hugepages, error) {
	var h Hugepages
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		var dst *int64
		unit := int64(1)
		switch key {
		case "HugePages_Total":
			dst = &h.Total
		case "HugePages_Free":
			dst = &h.Free
		case "Hugepagesize":
			dst = &h.PageBytes
			if len(fields) < 2 || fields[1] != "kB" {
				return Hugepages{}, fmt.Errorf("meminfo: Hugepagesize %q: want a size in kB", strings.TrimSpace(rest))
			}
			unit = 1024
		default:
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || n < 0 {
			return Hugepages{}, fmt.Errorf("meminfo: %s %q is not a count", key, fields[0])
		}
		*dst = n * unit
	}
	if err := sc.Err(); err != nil {
		return Hugepages{}, fmt.Errorf("meminfo: %w", err)
	}
	return h, nil
}

// SocketMemMB returns the total memory of a dpdk-socket-mem value: one MiB count per NUMA node,
// comma-separated ("1024" or "1024,1024"); empty entries count as 0, as in DPDK.
func SocketMemMB(v string) (int64, error) {
	var total int64
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("dpdk-socket-mem %q: %q is not a size in MiB", v, f)
		}
		total += n
	}
	return total, nil
}

// DPDKHost is what decides whether this host can start a DPDK ovs-vswitchd.
type DPDKHost struct {
	Binary      string    // the DPDK build's path
	BinaryOK    bool      // it exists and is not a directory
	Root        bool      // the caller runs as root
	Hugepages   Hugepages // the default-size hugepages
	HugeErr     error     // reading meminfo failed
	SocketMemMB int64     // the dpdk-socket-mem the vswitchd will use
}

// ProbeDPDK looks at this host: binary, the effective user id and the meminfo file at meminfo
// (DefaultMeminfo), for a vswitchd preallocating socketMemMB.
func ProbeDPDK(binary, meminfo string, socketMemMB int64) DPDKHost {
	h := DPDKHost{Binary: binary, Root: os.Geteuid() == 0, SocketMemMB: socketMemMB}
	if st, err := os.Stat(binary); err == nil && !st.IsDir() {
		h.BinaryOK = true
	}
	h.Hugepages, h.HugeErr = ReadHugepages(meminfo)
	return h
}

// Missing returns what keeps a DPDK vswitchd from starting, with the fix, as a phrase; "" when
// nothing does. The checks run in order: the binary, root, the hugepages (HugePages_Free ×
// Hugepagesize must cover SocketMemMB).
func (h DPDKHost) Missing() string {
	switch {
	case !h.BinaryOK:
		return h.Binary + " is not installed (apt-get install openvswitch-switch-dpdk)"
	case !h.Root:
		return "DPDK needs root"
	case h.HugeErr != nil:
		return fmt.Sprintf("cannot read free hugepages: %v", h.HugeErr)
	case h.Hugepages.FreeMB() < h.SocketMemMB:
		return fmt.Sprintf("%d MiB of hugepages free (%d of %d pages of %d kB), dpdk-socket-mem needs %d MiB "+
			"(reserve more: echo N > /proc/sys/vm/nr_hugepages)",
			h.Hugepages.FreeMB(), h.Hugepages.Free, h.Hugepages.Total, h.Hugepages.PageBytes>>10, h.SocketMemMB)
	}
	return ""
}
