package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// errNoDPDK is the cause of a DPDKOn start that cannot run DPDK.
var errNoDPDK = errors.New("DPDK not possible")

// hugepages is what /proc/meminfo says about the default hugepage size.
type hugepages struct {
	total, free int64 // pages
	pageBytes   int64
}

// freeMB returns the free hugepage memory in MiB.
func (h hugepages) freeMB() int64 { return h.free * h.pageBytes >> 20 }

// parseMeminfo reads HugePages_Total, HugePages_Free and Hugepagesize from /proc/meminfo's
// format. A kernel without hugetlbfs has none of them: zero pages, no error.
func parseMeminfo(r io.Reader) (hugepages, error) {
	var h hugepages
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
			dst = &h.total
		case "HugePages_Free":
			dst = &h.free
		case "Hugepagesize":
			dst = &h.pageBytes
			if len(fields) < 2 || fields[1] != "kB" {
				return hugepages{}, fmt.Errorf("meminfo: Hugepagesize %q: want a size in kB", strings.TrimSpace(rest))
			}
			unit = 1024
		default:
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || n < 0 {
			return hugepages{}, fmt.Errorf("meminfo: %s %q is not a count", key, fields[0])
		}
		*dst = n * unit
	}
	if err := sc.Err(); err != nil {
		return hugepages{}, fmt.Errorf("meminfo: %w", err)
	}
	return h, nil
}

// socketMemMB returns the total memory of a dpdk-socket-mem value: one MiB count per NUMA node,
// comma-separated ("1024" or "1024,1024"); empty entries count as 0, as in DPDK.
func socketMemMB(v string) (int64, error) {
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

// dpdkFacts is what the DPDK decision depends on.
type dpdkFacts struct {
	mode        DPDKMode
	binary      string // the DPDK build's path
	binaryOK    bool   // it exists
	root        bool
	hugepages   hugepages
	hugeErr     error  // reading meminfo failed
	socketMemMB int64  // dpdk-socket-mem the vswitchd will use
	initOff     string // where dpdk-init=false comes from, when it does
}

// decideDPDK says whether to run DPDK and why, as a phrase for Describe and the log. In on
// mode an impossible DPDK is an error wrapping errNoDPDK instead.
func decideDPDK(f dpdkFacts) (use bool, why string, err error) {
	if f.mode == DPDKOff {
		return false, "DPDK off as asked", nil
	}
	var missing string
	switch {
	case f.initOff != "":
		missing = f.initOff + " is false"
	case !f.binaryOK:
		missing = f.binary + " is not installed (apt-get install openvswitch-switch-dpdk)"
	case !f.root:
		missing = "DPDK needs root"
	case f.hugeErr != nil:
		missing = fmt.Sprintf("cannot read free hugepages: %v", f.hugeErr)
	case f.hugepages.freeMB() < f.socketMemMB:
		missing = fmt.Sprintf("%d MiB of hugepages free (%d of %d pages of %d kB), dpdk-socket-mem needs %d MiB "+
			"(reserve more: echo N > /proc/sys/vm/nr_hugepages)",
			f.hugepages.freeMB(), f.hugepages.free, f.hugepages.total, f.hugepages.pageBytes>>10, f.socketMemMB)
	}
	if missing == "" {
		return true, fmt.Sprintf("DPDK with %d MiB of hugepages (%d MiB were free)", f.socketMemMB, f.hugepages.freeMB()), nil
	}
	if f.mode == DPDKOn {
		return false, "", fmt.Errorf("%w: %s", errNoDPDK, missing)
	}
	return false, "no DPDK: " + missing, nil
}
