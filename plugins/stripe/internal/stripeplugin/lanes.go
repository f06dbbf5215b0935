package stripeplugin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/ovslane"
)

// LanesType is the plugin's port type for the lanes of the OVS-DPDK link mode: one object of
// this type on a bridge is count internal ports, the lanes a job in mode ovs-dpdk opens.
const LanesType = "stripe-lanes"

// LaneExternalID is the external_ids key every lane carries: the name of its lanes object.
const LaneExternalID = "stripe-lanes"

// Bounds of the veth lanes' options.
const (
	// maxVdev bounds options vdev (DPDK's af_packet device numbers).
	maxVdev = 65000
	// defaultVdevBase plus the first lane's number is the default vdev.
	defaultVdevBase = 1000
)

// netnsNameRe is a name under /run/netns, as the job's config.netns.
var netnsNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// lanesOptions are the options of a stripe-lanes port.
type lanesOptions struct {
	Count int    `option:"count,required" doc:"number of lanes, 1-16: the object NAME<n> makes NAME<n>, NAME<n+1>, …"`
	MTU   int    `option:"mtu" doc:"MTU of every lane, 68-65535 (default: OVS's, 1500); at most the NICs' MTU"`
	Kind  string `option:"kind" doc:"internal (default: internal ports, polled by ovs-vswitchd's main thread), dpdk (veth pairs whose lane end is a DPDK af_packet port, polled by a PMD thread) or system (veth pairs whose lane end is a system port)"`
	Netns string `option:"netns" doc:"dpdk, system: the named network namespace of ovs-vswitchd, where the veth pairs are made (default: the plugin's own)"`
	Vdev  int    `option:"vdev" doc:"dpdk: lane i's DPDK device is net_af_packet<vdev+i>, 0-65000 (default 1000 + the first lane's number); no other af_packet port of the vswitchd may use these numbers"`
}

// kind is the lanes' kind, LaneKindInternal when unset.
func (o lanesOptions) kind() string {
	if o.Kind == "" {
		return LaneKindInternal
	}
	return o.Kind
}

// lanesDoc documents the port type.
const lanesDoc = `Lanes of the stripe's OVS-DPDK link mode: internal ports of the bridge, one per link, which a
stripe job in mode ovs-dpdk opens (config.links[i].lane); the plugin's flows bind lane i to NIC i.
The object's name ends in a number n (e.g. stl0); options count=N makes the lanes named with
n, n+1, … n+N-1 (stl0 … stl3). Options: count (required), mtu, kind (internal, dpdk or system),
netns and vdev. With kind dpdk or system each lane is a veth pair the plugin makes in netns: the
end named like the lane is the bridge's port, the end named like the lane plus "e" (stl0e) is
the one the job opens (its config.lane_kind: veth).`

// lanesType is the port type's description in Info.
func lanesType() (api.ObjectType, error) {
	return sdk.PortType(LanesType, lanesOptions{}, lanesDoc)
}

// laneNames returns the lanes of a stripe-lanes object named name, with its options decoded and
// checked; errors are InvalidArgument naming the option or the name.
func laneNames(req api.PortRequest) ([]string, lanesOptions, error) {
	var o lanesOptions
	if req.Type != LanesType {
		return nil, o, sdk.Invalid(api.Problem{Field: "type", Message: fmt.Sprintf("%q is not a port type of this plugin (%s)", req.Type, LanesType)})
	}
	if err := sdk.DecodeOptions(req.Options, &o); err != nil {
		return nil, o, err
	}
	if o.Count < 1 || o.Count > ovslane.MaxBindings {
		return nil, o, sdk.Invalid(api.Problem{Field: "options.count", Message: fmt.Sprintf("%d: want 1 to %d lanes, one per link", o.Count, ovslane.MaxBindings)})
	}
	if o.MTU != 0 && (o.MTU < link.MinMTU || o.MTU > link.MaxMTU) {
		return nil, o, sdk.Invalid(api.Problem{Field: "options.mtu", Message: fmt.Sprintf("%d: want %d to %d (or leave it out)", o.MTU, link.MinMTU, link.MaxMTU)})
	}
	switch o.kind() {
	case LaneKindInternal:
		if o.Netns != "" || o.Vdev != 0 {
			return nil, o, sdk.Invalid(api.Problem{Field: "options.netns", Message: "netns and vdev belong to kind dpdk or system (veth lanes); remove them or set kind"})
		}
	case LaneKindDPDK, LaneKindSystem:
		if o.Netns != "" && !netnsNameRe.MatchString(o.Netns) {
			return nil, o, sdk.Invalid(api.Problem{Field: "options.netns", Message: fmt.Sprintf("%q: want a name under /run/netns (letters, digits, _ . -; at most 64)", clip(o.Netns))})
		}
		if o.Vdev < 0 || o.Vdev > maxVdev || (o.Vdev != 0 && o.kind() != LaneKindDPDK) {
			return nil, o, sdk.Invalid(api.Problem{Field: "options.vdev", Message: fmt.Sprintf("%d: want 0 to %d, and only with kind dpdk", o.Vdev, maxVdev)})
		}
	default:
		return nil, o, sdk.Invalid(api.Problem{Field: "options.kind", Message: fmt.Sprintf("%q: want internal (the default), dpdk or system", clip(o.Kind))})
	}
	prefix := strings.TrimRight(req.Name, "0123456789")
	digits := req.Name[len(prefix):]
	first, err := strconv.Atoi(digits)
	if prefix == "" || digits == "" || err != nil || len(digits) > 4 || (len(digits) > 1 && digits[0] == '0') {
		return nil, o, sdk.Invalid(api.Problem{Field: "name", Message: fmt.Sprintf("%q: a stripe-lanes object is named like its first lane, letters then a number without leading zeros (stl0)", clip(req.Name))})
	}
	names := make([]string, o.Count)
	for i := range names {
		names[i] = prefix + strconv.Itoa(first+i)
		dev := names[i]
		if vethKind(o.kind()) {
			dev = VethPeer(dev) // the longer of the pair's names
		}
		if err := link.CheckInterfaceName(dev); err != nil {
			return nil, o, sdk.Invalid(api.Problem{Field: "name", Message: fmt.Sprintf("lane %d would need device %q: %v; pick a shorter name", i, clip(dev), err)})
		}
	}
	if o.kind() == LaneKindDPDK && o.Vdev == 0 {
		o.Vdev = defaultVdevBase + first
	}
	return names, o, nil
}

// Validate checks a stripe-lanes port: name and options.
func (p *Plugin) Validate(_ context.Context, req api.PortRequest) ([]api.Problem, error) {
	_, _, err := laneNames(req)
	return sdk.ProblemsOf(err)
}

// Attach returns the lanes of a stripe-lanes port as ports of the request's bridge, the first
// named like the object; each carries external_ids stripe-lanes=<object>. Kind internal: internal
// ports, whose devices OVS creates (no host work). Kind dpdk or system: Attach first makes (or,
// on a replay, adopts) each lane's veth pair in options netns, up with offloads off, and returns
// the lane ends as DPDK af_packet ports (dpdk-devargs net_af_packet<vdev+i>,iface=<lane>) or
// system ports. A failure deletes the pairs this call created.
func (p *Plugin) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	names, o, err := laneNames(req)
	if err != nil {
		return api.Attachment{}, err
	}
	if vethKind(o.kind()) {
		var made []string
		for _, n := range names {
			created, err := ensureVethLane(ctx, o.Netns, n, o.MTU)
			if err != nil {
				for _, m := range made {
					_ = deleteVethLane(context.WithoutCancel(ctx), o.Netns, m)
				}
				return api.Attachment{}, err
			}
			if created {
				made = append(made, n)
			}
		}
	}
	var a api.Attachment
	for i, n := range names {
		var port api.OVSPort
		switch o.kind() {
		case LaneKindDPDK:
			port = sdk.SinglePort(n, "dpdk", map[string]string{"dpdk-devargs": "net_af_packet" + strconv.Itoa(o.Vdev+i) + ",iface=" + n})
		case LaneKindSystem:
			port = sdk.SinglePort(n, "", nil)
		default:
			port = sdk.SinglePort(n, "internal", nil)
		}
		port.ExternalIDs = map[string]string{LaneExternalID: req.Name}
		if o.MTU != 0 {
			mtu := o.MTU
			port.Interfaces[0].MTURequest = &mtu
		}
		a.Ports = append(a.Ports, port)
	}
	a.Status = fmt.Sprintf("%d stripe lanes (%s) %s…%s on bridge %s", len(names), o.kind(), names[0], names[len(names)-1], req.Bridge)
	return a, nil
}

// Detach deletes the veth pairs of a stripe-lanes port of kind dpdk or system (pairs already
// gone are fine); internal lanes, and a port whose options Attach refuses, need nothing.
func (p *Plugin) Detach(ctx context.Context, req api.PortRequest) error {
	names, o, err := laneNames(req)
	if err != nil || !vethKind(o.kind()) {
		return nil // a port Attach refused, or internal lanes: no host work to undo
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, deleteVethLane(ctx, o.Netns, n))
	}
	return errors.Join(errs...)
}
