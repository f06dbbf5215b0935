//go:build linux

package lab

import (
	"strconv"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// DPDKAFPacketDevargs returns the dpdk-devargs of an af_packet "NIC" on the Linux interface
// iface: "net_af_packet<index>,iface=<iface>". Within one DPDK process every port needs its own
// index; OVSVswitchd.AFPacketDevargs hands them out.
func DPDKAFPacketDevargs(index int, iface string) string {
	return "net_af_packet" + strconv.Itoa(index) + ",iface=" + iface
}

// AFPacketDevargs returns DPDKAFPacketDevargs with the next unused vdev index of this vswitchd
// (1, 2, …), for a type=dpdk interface on iface, which must be in the vswitchd's namespace.
// Safe for concurrent use.
func (v *OVSVswitchd) AFPacketDevargs(iface string) string {
	return DPDKAFPacketDevargs(int(v.vdevs.Add(1)), iface)
}

// checkFreeHugepages fails the test unless socketMemMB of hugepage memory of the default size
// is free (ovsproc.ReadHugepages, the probe the sandbox uses).
func checkFreeHugepages(t testing.TB, socketMemMB int) {
	t.Helper()
	h, err := ovsproc.ReadHugepages(ovsproc.DefaultMeminfo)
	if err != nil {
		t.Fatalf("lab: DPDK vswitchd: %v", err)
	}
	if h.FreeMB() < int64(socketMemMB) {
		t.Fatalf("lab: DPDK vswitchd needs %d MiB of free hugepages, %d MiB are free of %d MiB "+
			"reserved; another DPDK process holds them (see `grep -i huge /proc/meminfo`) or "+
			"vm.nr_hugepages is too low (lab.EnsureHugepages, or echo N > /proc/sys/vm/nr_hugepages)",
			socketMemMB, h.FreeMB(), h.TotalMB())
	}
}
