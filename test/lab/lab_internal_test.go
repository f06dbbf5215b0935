//go:build linux

package lab

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// recordTB records Skipf and Fatalf instead of acting on them.
type recordTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordTB) Helper()                        {}
func (r *recordTB) Skipf(format string, a ...any)  { r.skipped = fmt.Sprintf(format, a...) }
func (r *recordTB) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }

func TestDecide(t *testing.T) {
	tests := []struct {
		name          string
		env           string
		missing       []string
		skip, failure bool
	}{
		{name: "all present", env: "1"},
		{name: "missing, lenient", missing: []string{"program iperf3"}, skip: true},
		{name: "missing, env=0", env: "0", missing: []string{"program iperf3"}, skip: true},
		{name: "missing, strict", env: "1", missing: []string{"program iperf3"}, failure: true},
		{name: "missing, strict true", env: "true", missing: []string{"root"}, failure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordTB{TB: t}
			decide(rec, tt.env, tt.missing)
			if got := rec.skipped != ""; got != tt.skip {
				t.Errorf("skipped = %q, want skip %v", rec.skipped, tt.skip)
			}
			if got := rec.failed != ""; got != tt.failure {
				t.Errorf("failed = %q, want failure %v", rec.failed, tt.failure)
			}
			msg := rec.skipped + rec.failed
			for _, m := range tt.missing {
				if !strings.Contains(msg, m) || !strings.Contains(msg, "make test") {
					t.Errorf("message %q does not name %q and the fix", msg, m)
				}
			}
		})
	}
}

func TestExpand(t *testing.T) {
	got := expand([]Need{NeedTraffic, NeedDPDK, NeedRoot})
	want := []Need{NeedRoot, NeedNetns, NeedTraffic, NeedOVS, NeedDPDK}
	if !slices.Equal(got, want) {
		t.Errorf("expand = %v, want %v", got, want)
	}
}

func TestNamesFitAndCarryTheOwner(t *testing.T) {
	seen := map[string]bool{}
	for _, pid := range []int{1, 4194304} { // pid_max is at most 2^22
		for range 500 {
			name := vethPrefix + ownerTag(pid) + randomChars(6) + "a"
			if len(name) != vethNameLen || len(name) > 15 {
				t.Fatalf("veth name %q has %d characters, want %d (at most 15)", name, len(name), vethNameLen)
			}
			if seen[name] {
				t.Fatalf("duplicate name %q", name)
			}
			seen[name] = true
		}
	}
	if ownerGone(ownerTag(os.Getpid())) {
		t.Error("ownerGone says this very process is gone")
	}
	if !ownerGone(ownerTag(4194304 + 1)) { // above pid_max: cannot exist
		t.Error("ownerGone says a pid above pid_max is alive")
	}
	if ownerGone("!!!!!") {
		t.Error("ownerGone says an unparsable tag is gone")
	}
}

func TestOtherConfigArgs(t *testing.T) {
	got := OVSVswitchdSpec{Mode: DPDK, SocketMemMB: 256, OtherConfig: map[string]string{"pmd-maxsleep": "500"}}.otherConfigArgs()
	want := []string{
		`other_config:"dpdk-extra"="--no-pci"`,
		`other_config:"dpdk-init"="true"`,
		`other_config:"dpdk-socket-mem"="256"`,
		`other_config:"pmd-maxsleep"="500"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("otherConfigArgs = %q, want %q", got, want)
	}
}

func TestDPDKAFPacketDevargs(t *testing.T) {
	if got, want := DPDKAFPacketDevargs(3, "ovlabcd1234a"), "net_af_packet3,iface=ovlabcd1234a"; got != want {
		t.Errorf("DPDKAFPacketDevargs = %q, want %q", got, want)
	}
	v := &OVSVswitchd{}
	if a, b := v.AFPacketDevargs("x"), v.AFPacketDevargs("y"); a != "net_af_packet1,iface=x" || b != "net_af_packet2,iface=y" {
		t.Errorf("AFPacketDevargs handed out %q, %q", a, b)
	}
}
