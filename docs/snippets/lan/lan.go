package main

import (
	"context"
	"log/slog"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// lan provides the port type lan. sdk.Base answers the rest of the contract: no configuration,
// health OK, nothing to detach, nothing to list.
type lan struct {
	sdk.Base
	log *slog.Logger
}

// options are the options of a lan port, decoded by sdk.DecodeOptions.
type options struct {
	MTU int `option:"mtu" doc:"MTU of the port (68-9216), default 1500"`
}

func (p *lan) Info(ctx context.Context) (api.Info, error) {
	t, err := sdk.PortType("lan", options{}, "An internal port. Options: mtu.")
	if err != nil {
		return api.Info{}, err
	}
	return api.Info{
		Name:        "lan", // must match the name in the daemon's config
		Version:     "0.1.0",
		Description: "internal ports with an MTU",
		Types:       []api.ObjectType{t},
	}, nil
}

func (p *lan) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) {
	_, err := decode(req)
	return sdk.ProblemsOf(err)
}

func (p *lan) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	o, err := decode(req)
	if err != nil {
		return api.Attachment{}, err // InvalidArgument naming options.mtu
	}
	port := sdk.SinglePort(req.Name, "internal", nil)
	port.Interfaces[0].MTURequest = &o.MTU
	return api.Attachment{Ports: []api.OVSPort{port}, Status: "internal port"}, nil
}

func decode(req api.PortRequest) (options, error) {
	o := options{MTU: 1500} // defaults stay when the option is absent
	if err := sdk.DecodeOptions(req.Options, &o); err != nil {
		return o, err
	}
	if o.MTU < 68 || o.MTU > 9216 {
		return o, sdk.Invalid(api.Problem{Field: "options.mtu", Message: "must be 68-9216"})
	}
	return o, nil
}
