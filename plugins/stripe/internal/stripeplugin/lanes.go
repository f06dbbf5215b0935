package stripeplugin

import (
	"context"
	"fmt"
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

// lanesOptions are the options of a stripe-lanes port.
type lanesOptions struct {
	Count int `option:"count,required" doc:"number of lanes, 1-16: the object NAME<n> makes NAME<n>, NAME<n+1>, …"`
	MTU   int `option:"mtu" doc:"MTU of every lane, 68-65535 (default: OVS's, 1500); at most the NICs' MTU"`
}

// lanesDoc documents the port type.
const lanesDoc = `Lanes of the stripe's OVS-DPDK link mode: internal ports of the bridge, one per link, which a
stripe job in mode ovs-dpdk opens (config.links[i].lane); the plugin's flows bind lane i to NIC i.
The object's name ends in a number n (e.g. stl0); options count=N makes the lanes named with
n, n+1, … n+N-1 (stl0 … stl3). Options: count (required), mtu.`

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
	prefix := strings.TrimRight(req.Name, "0123456789")
	digits := req.Name[len(prefix):]
	first, err := strconv.Atoi(digits)
	if prefix == "" || digits == "" || err != nil || len(digits) > 4 || (len(digits) > 1 && digits[0] == '0') {
		return nil, o, sdk.Invalid(api.Problem{Field: "name", Message: fmt.Sprintf("%q: a stripe-lanes object is named like its first lane, letters then a number without leading zeros (stl0)", clip(req.Name))})
	}
	names := make([]string, o.Count)
	for i := range names {
		names[i] = prefix + strconv.Itoa(first+i)
		if err := link.CheckInterfaceName(names[i]); err != nil {
			return nil, o, sdk.Invalid(api.Problem{Field: "name", Message: fmt.Sprintf("lane %d would be %q: %v; pick a shorter name", i, clip(names[i]), err)})
		}
	}
	return names, o, nil
}

// Validate checks a stripe-lanes port: name and options.
func (p *Plugin) Validate(_ context.Context, req api.PortRequest) ([]api.Problem, error) {
	_, _, err := laneNames(req)
	return sdk.ProblemsOf(err)
}

// Attach returns the lanes of a stripe-lanes port as internal ports of the request's bridge,
// the first named like the object; each carries external_ids stripe-lanes=<object>. OVS creates
// the lanes' devices; the plugin does no host work, so a replay returns the same shape.
func (p *Plugin) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	names, o, err := laneNames(req)
	if err != nil {
		return api.Attachment{}, err
	}
	var a api.Attachment
	for _, n := range names {
		port := sdk.SinglePort(n, "internal", nil)
		port.ExternalIDs = map[string]string{LaneExternalID: req.Name}
		if o.MTU != 0 {
			mtu := o.MTU
			port.Interfaces[0].MTURequest = &mtu
		}
		a.Ports = append(a.Ports, port)
	}
	a.Status = fmt.Sprintf("%d stripe lanes %s…%s on bridge %s", len(names), names[0], names[len(names)-1], req.Bridge)
	return a, nil
}
