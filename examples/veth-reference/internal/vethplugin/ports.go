package vethplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// PortOptions are the options of a port of type veth (the Interface's options in OVSDB), decoded
// by sdk.DecodeOptions; OptionsSchema derives the JSON schema from the tags.
type PortOptions struct {
	Peer    string       `option:"peer" doc:"peer end's name (default <port>-p)"`
	Netns   string       `option:"netns" doc:"named network namespace (ip netns) of the peer end; default: the host's"`
	Address netip.Prefix `option:"address" doc:"address/prefix of the peer end, e.g. 10.0.0.1/24"`
	MTU     int          `option:"mtu" doc:"MTU of both ends (default: the plugin's default_mtu)"`
	// Offloads keeps the ends' offloads on; off (the default) is what TCP needs on the
	// userspace datapath.
	Offloads bool `option:"offloads" doc:"keep checksum and segmentation offloads on (default: the plugin's offloads, false: off, as the userspace datapath needs for TCP)"`
	// Stats gives the port a veth-stats job of its own (Attachment.Jobs), which the daemon
	// starts with the port, restarts with the plugin and stops with the port.
	Stats bool `option:"stats" doc:"sample this pair's counters in a veth-stats job of the port's own, named stats-<port> (default false)"`
}

// portJobs returns the data-path jobs of a port: its own veth-stats job when options:stats is
// set. The options were decoded by specOf already.
func portJobs(req api.PortRequest) ([]api.Job, error) {
	var o PortOptions
	if err := sdk.DecodeOptions(req.Options, &o); err != nil || !o.Stats {
		return nil, err
	}
	config, err := json.Marshal(JobConfig{Ports: []string{req.Name}})
	if err != nil {
		return nil, api.Errorf(api.Internal, "port %s: job config: %w", req.Name, err)
	}
	return []api.Job{{Name: "stats-" + req.Name, Type: StatsJobType, Config: config}}, nil
}

// optionsDoc documents the port type for humans.
const optionsDoc = `A veth pair: the host end, named like the port, is attached to the bridge as an OVS "system"
interface (af_packet on a datapath_type=netdev bridge); the peer end gets options:peer (default
<port>-p), is moved into the named namespace options:netns (created when missing, unless the plugin
is configured otherwise) and gets options:address and options:mtu. Checksum and segmentation offloads
are turned off on both ends (TCP through the userspace datapath needs it) unless options:offloads=true.`

// attachState is what Attach returns as Attachment.State; the host hands it back in
// PortRequest.State (replay, Detach).
type attachState struct {
	Version      int    `json:"v"`
	Peer         string `json:"peer"`
	Netns        string `json:"netns,omitempty"`
	CreatedNetns bool   `json:"created_netns,omitempty"`
}

// encodeState returns the state of a pair as Attach and List report it.
func encodeState(s veth.Spec) ([]byte, error) {
	return sdk.EncodeState(attachState{Version: 1, Peer: s.Peer, Netns: s.Netns, CreatedNetns: s.CreateNetns})
}

// specOf turns a port request into a pair spec and the problems of its request, with fields
// named as the host shows them ("name", "type", "options.<key>"). err is for failing to
// decode (a plugin bug), not for an invalid request.
func (p *Plugin) specOf(req api.PortRequest, cfg Config) (veth.Spec, []api.Problem, error) {
	var problems []api.Problem
	if req.Type != PortType {
		problems = append(problems, api.Problem{Field: "type", Message: fmt.Sprintf("%q is not a type of this plugin (%s)", req.Type, PortType)})
	}
	o := PortOptions{MTU: cfg.DefaultMTU, Offloads: cfg.Offloads}
	decoded, err := sdk.ProblemsOf(sdk.DecodeOptions(req.Options, &o))
	if err != nil {
		return veth.Spec{}, nil, err
	}
	problems = append(problems, decoded...)
	spec := veth.Spec{Port: req.Name, Peer: o.Peer, Netns: o.Netns, CreateNetns: o.Netns != "" && cfg.createNetns(),
		Address: o.Address, MTU: o.MTU, KeepOffloads: o.Offloads, Bridge: req.Bridge}
	var fe *veth.FieldError
	for _, err := range veth.Problems(spec.Validate()) {
		if !errors.As(err, &fe) {
			continue
		}
		field := "options." + fe.Field
		switch fe.Field {
		case "port":
			field = "name"
		case "bridge":
			field = "bridge"
		}
		if !hasProblem(problems, field) { // an option that did not parse is reported once
			problems = append(problems, api.Problem{Field: field, Message: fe.Reason})
		}
	}
	return spec.WithDefaults(), problems, nil
}

// Validate checks a port request without side effects: the options, then what the host
// looks like (a missing namespace the plugin may not create, the port's name taken by an
// interface the plugin does not own).
func (p *Plugin) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	spec, problems, err := p.specOf(req, cfg)
	if err != nil || len(problems) > 0 {
		return problems, err
	}
	if spec.Netns != "" && !spec.CreateNetns {
		if _, err := os.Stat(filepath.Join(p.netnsDir, spec.Netns)); err != nil {
			problems = append(problems, api.Problem{Field: "options.netns",
				Message: fmt.Sprintf("namespace %s does not exist and the plugin is configured not to create namespaces", spec.Netns)})
		}
	}
	if _, err := p.kernel().Get(spec.Port); errors.Is(err, veth.ErrNotOwned) {
		problems = append(problems, api.Problem{Field: "name", Message: fmt.Sprintf("interface %s exists and was not created by this plugin", spec.Port)})
	}
	return problems, ctx.Err()
}

// Attach creates (or adopts, or converges) the port's veth pair and returns its OVS shape: one
// port with one interface of type "system" named like the port — the host end, which a
// datapath_type=netdev bridge opens with af_packet. The state records the peer and its
// namespace so that Detach finds the namespace to clean up even when the pair is gone.
func (p *Plugin) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	cfg, err := p.config()
	if err != nil {
		return api.Attachment{}, err
	}
	spec, problems, err := p.specOf(req, cfg)
	if err != nil {
		return api.Attachment{}, err
	}
	if len(problems) > 0 {
		return api.Attachment{}, sdk.Invalid(problems...)
	}
	if len(req.State) > 0 {
		p.log.Debug("replaying port", "port", req.Name, "state", string(req.State))
	}
	st, err := p.kernel().Ensure(ctx, spec)
	if err != nil {
		return api.Attachment{}, apiError(fmt.Sprintf("port %s", req.Name), err)
	}
	state, err := encodeState(st.Spec)
	if err != nil {
		return api.Attachment{}, err
	}
	port := sdk.SinglePort(spec.Port, OVSInterfaceType, nil)
	iface := &port.Interfaces[0]
	iface.ExternalIDs = map[string]string{"veth-peer": spec.Peer}
	endpoints := map[string]string{"peer": spec.Peer}
	if spec.Netns != "" {
		iface.ExternalIDs["veth-netns"] = spec.Netns
		endpoints["netns"] = spec.Netns
	}
	if spec.MTU != 0 {
		mtu := spec.MTU
		iface.MTURequest = &mtu // so that OVS keeps the host end's MTU where the plugin set it
	}
	if spec.Address.IsValid() {
		endpoints["address"] = spec.Address.String()
	}
	jobs, err := portJobs(req)
	if err != nil {
		return api.Attachment{}, err
	}
	return api.Attachment{Ports: []api.OVSPort{port}, State: state, Status: status(st), Endpoints: endpoints, Jobs: jobs}, nil
}

// Detach deletes the port's pair, and its namespace when the plugin created it and it is
// empty. A port without a pair is already detached; an interface of that name the plugin did
// not create is refused (FailedPrecondition) and left alone.
func (p *Plugin) Detach(ctx context.Context, req api.PortRequest) error {
	if _, err := p.config(); err != nil {
		return err
	}
	var st attachState
	if _, err := sdk.DecodeState(req, &st); err != nil {
		p.log.Warn("ignoring unreadable state", "port", req.Name, "err", err) // the kernel marks suffice
	}
	netns := st.Netns
	if netns == "" {
		netns = req.Options["netns"]
	}
	if err := p.kernel().Delete(ctx, req.Name, netns); err != nil {
		return apiError(fmt.Sprintf("port %s", req.Name), err)
	}
	return nil
}

// List reports every pair the plugin finds in the kernel with its mark, whatever the host
// remembers: the bridge and state come from the marks.
func (p *Plugin) List(ctx context.Context) ([]api.OwnedPort, error) {
	if _, err := p.config(); err != nil {
		return nil, err
	}
	links := p.kernel()
	// List is where the host reconciles with the plugin after a restart: first collect what
	// an interrupted Attach left (a namespace without its pair), which List could not report.
	if s, ok := links.(interface{ Sweep() error }); ok {
		if err := s.Sweep(); err != nil {
			p.log.Warn("sweeping namespaces left by interrupted attaches", "error", err)
		}
	}
	states, err := links.List()
	if err != nil {
		return nil, apiError("list", err)
	}
	out := make([]api.OwnedPort, 0, len(states))
	for _, st := range states {
		state, err := encodeState(st.Spec)
		if err != nil {
			return nil, err
		}
		out = append(out, api.OwnedPort{Bridge: st.Spec.Bridge, Name: st.Spec.Port, Type: PortType,
			State: state, Status: status(st)})
	}
	return out, ctx.Err()
}

// status describes a pair for humans: "peer v1-p in netns red, 10.0.0.1/24, mtu 1500, up".
func status(st veth.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "peer %s", st.Spec.Peer)
	if st.Spec.Netns != "" {
		fmt.Fprintf(&b, " in netns %s", st.Spec.Netns)
	}
	for _, a := range st.Addresses {
		fmt.Fprintf(&b, ", %s", a)
	}
	fmt.Fprintf(&b, ", mtu %d", st.Spec.MTU)
	switch {
	case st.PeerIndex == 0:
		b.WriteString(", peer missing")
	case st.HostUp && st.PeerUp:
		b.WriteString(", up")
	default:
		b.WriteString(", down")
	}
	return b.String()
}

// apiError maps the veth package's errors to the contract's codes, naming what failed.
func apiError(what string, err error) error {
	code := api.Unavailable // netlink trouble: worth a retry
	switch {
	case errors.Is(err, veth.ErrInvalid):
		code = api.InvalidArgument
	case errors.Is(err, veth.ErrConflict), errors.Is(err, veth.ErrNotOwned), errors.Is(err, veth.ErrNetnsNotFound):
		code = api.FailedPrecondition
	case errors.Is(err, veth.ErrNotFound):
		code = api.NotFound
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	}
	return api.Errorf(code, "%s: %w", what, err)
}

// hasProblem reports whether problems has one for field.
func hasProblem(problems []api.Problem, field string) bool {
	return slices.ContainsFunc(problems, func(p api.Problem) bool { return p.Field == field })
}
