package stripeplugin

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// The kinds of a stripe-lanes object (option kind).
const (
	// LaneKindInternal makes each lane an internal port of the bridge, whose tap device the
	// engine opens; ovs-vswitchd's main thread polls it (the default).
	LaneKindInternal = "internal"
	// LaneKindDPDK makes each lane a veth pair: the end named like the lane is a DPDK af_packet
	// port of the bridge (polled by a PMD thread), the end named VethPeer(lane) is the engine's.
	LaneKindDPDK = "dpdk"
	// LaneKindSystem makes each lane a veth pair whose end named like the lane is a system port
	// of the bridge (for the userspace datapath without DPDK).
	LaneKindSystem = "system"
)

// vethPeerSuffix ends the name of a veth lane's engine end.
const vethPeerSuffix = "e"

// hostCommandTimeout bounds each ip or ethtool run of the veth lanes' host work.
const hostCommandTimeout = 10 * time.Second

// VethPeer is the device the engine opens for the veth lane named lane: lane + "e".
func VethPeer(lane string) string { return lane + vethPeerSuffix }

// vethKind reports whether kind is a veth lane kind (dpdk or system).
func vethKind(kind string) bool { return kind == LaneKindDPDK || kind == LaneKindSystem }

// hostCmd runs name with args (no shell), in the named network namespace when netns is set
// (ip -n for ip, ip netns exec otherwise). It returns stdout, or an error quoting stderr.
func hostCmd(ctx context.Context, netns, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, hostCommandTimeout)
	defer cancel()
	argv := append([]string{name}, args...)
	switch {
	case netns != "" && name == "ip":
		argv = append([]string{"ip", "-n", netns}, args...)
	case netns != "":
		argv = append([]string{"ip", "netns", "exec", netns, name}, args...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// errNoDevice marks a device that does not exist.
var errNoDevice = errors.New("no such device")

// vethPeerOf returns the name of dev's veth peer in netns ("" when dev is not a veth), or
// errNoDevice.
func vethPeerOf(ctx context.Context, netns, dev string) (string, error) {
	out, err := hostCmd(ctx, netns, "ip", "-o", "-d", "link", "show", "dev", dev)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), "Cannot find device") {
			return "", fmt.Errorf("%s: %w", dev, errNoDevice)
		}
		return "", err
	}
	// "7: stl0@stl0e: <…> … link/ether … veth …" (-d adds the kind): the name field is dev@peer.
	f := strings.Fields(out)
	if len(f) < 2 || !strings.Contains(out, " veth") {
		return "", nil
	}
	_, peer, ok := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
	if !ok {
		return "", nil
	}
	return peer, nil
}

// ensureVethLane makes the veth pair of lane in netns, or adopts it when it exists (a replay),
// and sets both ends up with offloads off (af_packet needs whole, checksummed frames) and the
// MTU when mtu > 0. It reports whether it created the pair. A device named like the lane or its
// peer that is not this pair is FailedPrecondition.
func ensureVethLane(ctx context.Context, netns, lane string, mtu int) (created bool, err error) {
	peer := VethPeer(lane)
	got, err := vethPeerOf(ctx, netns, lane)
	switch {
	case errors.Is(err, errNoDevice):
		if _, perr := vethPeerOf(ctx, netns, peer); !errors.Is(perr, errNoDevice) {
			return false, api.Errorf(api.FailedPrecondition, "lane %s: device %s already exists in netns %q but %s does not: delete %s or rename the lanes", lane, peer, netns, lane, peer)
		}
		if _, err := hostCmd(ctx, netns, "ip", "link", "add", lane, "type", "veth", "peer", "name", peer); err != nil {
			return false, api.Errorf(api.Unavailable, "lane %s: create its veth pair: %v", lane, err)
		}
		created = true
	case err != nil:
		return false, api.Errorf(api.Unavailable, "lane %s: %v", lane, err)
	case got != peer:
		return false, api.Errorf(api.FailedPrecondition, "lane %s: device %s already exists in netns %q and is not a veth paired with %s: delete it or rename the lanes", lane, lane, netns, peer)
	}
	for _, dev := range []string{lane, peer} {
		args := []string{"link", "set", "dev", dev}
		if mtu > 0 {
			args = append(args, "mtu", strconv.Itoa(mtu))
		}
		args = append(args, "up")
		if _, err = hostCmd(ctx, netns, "ip", args...); err == nil {
			_, err = hostCmd(ctx, netns, "ethtool", "-K", dev, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off")
		}
		if err != nil {
			if created {
				_ = deleteVethLane(context.WithoutCancel(ctx), netns, lane)
			}
			return false, api.Errorf(api.Unavailable, "lane %s: set up %s: %v (ethtool is needed to turn offloads off)", lane, dev, err)
		}
	}
	return created, nil
}

// deleteVethLane deletes lane's veth pair in netns; a pair already gone is not an error.
func deleteVethLane(ctx context.Context, netns, lane string) error {
	_, err := hostCmd(ctx, netns, "ip", "link", "del", "dev", lane)
	if err != nil && !strings.Contains(err.Error(), "Cannot find device") && !strings.Contains(err.Error(), "does not exist") {
		return api.Errorf(api.Unavailable, "lane %s: delete its veth pair: %v", lane, err)
	}
	return nil
}
