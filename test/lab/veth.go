//go:build linux

package lab

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// VethSpec describes a veth pair. The zero value is a pair with both ends up in the test's
// namespace, without addresses.
type VethSpec struct {
	// ANetns and BNetns are the namespaces of the two ends (nil: the test's own).
	ANetns, BNetns *Netns
	// AAddr and BAddr are optional addresses with prefix length ("10.99.0.1/24", "fd00::1/64").
	// IPv6 addresses are added with nodad, so they are usable at once.
	AAddr, BAddr string
	// MTU sets both ends' MTU when not zero.
	MTU int
	// DisableOffloads turns checksum and segmentation offloads off on both ends (see
	// DisableOffloads); needed when traffic crosses an af_packet or DPDK port.
	DisableOffloads bool
}

// VethEnd is one end of a veth pair.
type VethEnd struct {
	// Name is the interface name: "ovl", the owner's tag (its pid in base 36, 5 characters),
	// 6 random characters and "a" or "b"; 15 characters, the kernel's limit.
	Name string
	// Netns is the namespace the end lives in; nil for the test's own.
	Netns *Netns
}

// VethPair is a veth pair owned by one test.
type VethPair struct {
	// A and B are the two ends; their names differ only in the last letter (a/b).
	A, B VethEnd
}

// NewVethPair creates a veth pair with unique names directly in the spec's namespaces, applies
// MTU, addresses and offload settings, and brings both ends up. At cleanup it deletes the pair
// (deleting one end removes both; ends whose namespace is already gone are gone too). It calls
// Require(t, NeedNetns) and fails the test on any other error.
func NewVethPair(t testing.TB, spec VethSpec) *VethPair {
	t.Helper()
	Require(t, NeedNetns)
	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	sweep(t)
	base := vethPrefix + ownerTag(os.Getpid()) + randomChars(6)
	p := &VethPair{A: VethEnd{Name: base + "a", Netns: spec.ANetns}, B: VethEnd{Name: base + "b", Netns: spec.BNetns}}
	args := []string{"link", "add", p.A.Name}
	if spec.ANetns != nil {
		args = append(args, "netns", spec.ANetns.Name)
	}
	args = append(args, "type", "veth", "peer", "name", p.B.Name)
	if spec.BNetns != nil {
		args = append(args, "netns", spec.BNetns.Name)
	}
	if _, _, err := ovsproc.Run(ctx, nil, "ip", args...); err != nil {
		t.Fatalf("lab: create veth pair %s/%s: %v", p.A.Name, p.B.Name, err)
	}
	t.Cleanup(func() { p.cleanup(t) })
	for _, e := range []struct {
		end  VethEnd
		addr string
	}{{p.A, spec.AAddr}, {p.B, spec.BAddr}} {
		if err := e.end.setup(ctx, e.addr, spec.MTU); err != nil {
			t.Fatalf("lab: %v", err)
		}
		if spec.DisableOffloads {
			DisableOffloads(t, e.end.Netns, e.end.Name)
		}
	}
	return p
}

// setup applies MTU and address to the end and brings it up.
func (e VethEnd) setup(ctx context.Context, addr string, mtu int) error {
	if mtu > 0 {
		if err := e.Netns.ip(ctx, "link", "set", "dev", e.Name, "mtu", strconv.Itoa(mtu)); err != nil {
			return fmt.Errorf("veth %s in %s: %w", e.Name, e.Netns, err)
		}
	}
	if addr != "" {
		args := []string{"addr", "add", addr, "dev", e.Name}
		if strings.Contains(addr, ":") {
			args = append(args, "nodad")
		}
		if err := e.Netns.ip(ctx, args...); err != nil {
			return fmt.Errorf("veth %s in %s: %w", e.Name, e.Netns, err)
		}
	}
	if err := e.Netns.ip(ctx, "link", "set", "dev", e.Name, "up"); err != nil {
		return fmt.Errorf("veth %s in %s: %w", e.Name, e.Netns, err)
	}
	return nil
}

// cleanup deletes the pair unless it is already gone.
func (p *VethPair) cleanup(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	err := p.A.Netns.ip(ctx, "link", "del", "dev", p.A.Name)
	if err != nil && !strings.Contains(err.Error(), "Cannot find device") &&
		!strings.Contains(err.Error(), "Invalid \"netns\" value") && !strings.Contains(err.Error(), "No such file") {
		t.Errorf("lab: delete veth %s in %s: %v", p.A.Name, p.A.Netns, err)
	}
}

// DisableOffloads runs `ethtool -K dev tx off rx off tso off gso off gro off` in ns (nil: the
// test's own). Without it, TCP through af_packet ports stalls: the kernel hands over packets
// with partial checksums and oversized segments that a userspace switch forwards as they are.
// Fails the test on error.
func DisableOffloads(t testing.TB, ns *Netns, dev string) {
	t.Helper()
	ns.Run(t, "ethtool", "-K", dev, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off")
}

// Shape makes dev a slow link: a tbf root qdisc with the given rate (tc syntax: "200mbit"),
// a 64 kB burst and 50 ms of queue. It replaces any root qdisc on dev and shapes egress only.
// At cleanup the qdisc is deleted (silently, when dev is already gone). Fails the test on error.
func Shape(t testing.TB, ns *Netns, dev, rate string) {
	t.Helper()
	setRootQdisc(t, ns, dev, "tbf", "rate", rate, "burst", "64kb", "latency", "50ms")
}

// setRootQdisc runs `tc qdisc replace dev <dev> root <qdisc…>` in ns and deletes it at cleanup.
func setRootQdisc(t testing.TB, ns *Netns, dev string, qdisc ...string) {
	t.Helper()
	ns.Run(t, "tc", append([]string{"qdisc", "replace", "dev", dev, "root"}, qdisc...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		_, _ = ns.Exec(ctx, "tc", "qdisc", "del", "dev", dev, "root")
	})
}
