// Command ovsplane-plugin-sample is a template for an ovsplane plugin: copy this directory and
// replace the port type. It provides the port type "sample", an OVS internal port whose MTU
// and VLAN tag come from its options. It does no host work (ovs-vswitchd creates the internal
// device from the rows the daemon writes), so sdk.Base's Detach and List are right for it.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// What the plugin announces. Name must equal the plugin's name in the daemon configuration.
const (
	Name     = "sample"
	Version  = "0.1.0"
	PortType = "sample"
)

// options are a sample port's options (OVS options are strings), decoded by sdk.DecodeOptions.
type options struct {
	MTU int  `option:"mtu" doc:"MTU of the port, 68-9216 (default 1500)"`
	Tag *int `option:"tag" doc:"VLAN tag of the port, 1-4094 (default: untagged)"`
}

// plugin is the plugin. sdk.Base supplies the rest of the contract: no configuration, health
// OK, nothing to detach, nothing to list.
type plugin struct {
	sdk.Base
	log *slog.Logger
}

// Info describes the plugin and its port type (the options' schema comes from the struct).
func (p *plugin) Info(context.Context) (api.Info, error) {
	t, err := sdk.PortType(PortType, options{}, "An internal port with an MTU and an optional VLAN tag.")
	if err != nil {
		return api.Info{}, err
	}
	return api.Info{Name: Name, Version: Version, Description: "internal ports with an MTU and a tag",
		Types: []api.ObjectType{t}}, nil
}

// Validate returns the problems of a request, each naming its option; it changes nothing.
func (p *plugin) Validate(_ context.Context, req api.PortRequest) ([]api.Problem, error) {
	_, err := decode(req)
	return sdk.ProblemsOf(err)
}

// Attach returns the port's OVS shape; the daemon writes it. The same request always gives the
// same shape, so a retry or a replay (req.Replay) needs nothing special.
func (p *plugin) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	o, err := decode(req)
	if err != nil {
		return api.Attachment{}, err // InvalidArgument naming the options
	}
	port := sdk.SinglePort(req.Name, "internal", nil)
	port.Tag = o.Tag
	port.Interfaces[0].MTURequest = &o.MTU
	p.log.Debug("attach", "port", req.Name, "mtu", o.MTU, "replay", req.Replay)
	return api.Attachment{Ports: []api.OVSPort{port}, Status: fmt.Sprintf("internal port, mtu %d", o.MTU)}, nil
}

// decode reads and checks a request's options.
func decode(req api.PortRequest) (options, error) {
	o := options{MTU: 1500}
	if err := sdk.DecodeOptions(req.Options, &o); err != nil {
		return o, err
	}
	var problems []api.Problem
	if o.MTU < 68 || o.MTU > 9216 {
		problems = append(problems, api.Problem{Field: "options.mtu", Message: fmt.Sprintf("%d is not in 68-9216", o.MTU)})
	}
	if o.Tag != nil && (*o.Tag < 1 || *o.Tag > 4094) {
		problems = append(problems, api.Problem{Field: "options.tag", Message: fmt.Sprintf("%d is not in 1-4094", *o.Tag)})
	}
	if len(problems) > 0 {
		return o, sdk.Invalid(problems...)
	}
	return o, nil
}

func main() {
	// Standard output belongs to the handshake with the daemon: log to standard error only.
	sdk.Serve(&plugin{log: sdk.NewLogger(os.Stderr, slog.LevelInfo)})
}
