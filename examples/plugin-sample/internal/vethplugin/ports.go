package vethplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/examples/plugin-sample/internal/veth"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// The port options of type veth (Interface options in OVSDB).
const (
	OptPeer    = "peer"    // peer end's name (default: veth.DefaultPeerName of the port)
	OptNetns   = "netns"   // named namespace of the peer end (default: the host's)
	OptAddress = "address" // address/prefix of the peer end, e.g. 10.0.0.1/24
	OptMTU     = "mtu"     // MTU of both ends (default: Config.DefaultMTU)
)

// knownOptions lists the options in the order problems are reported.
var knownOptions = []string{OptPeer, OptNetns, OptAddress, OptMTU}

// optionsSchema is the JSON schema of the port options (OVS options are strings).
const optionsSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "peer": {"type": "string", "maxLength": 15, "description": "peer end's name (default <port>-p)"},
    "netns": {"type": "string", "description": "named network namespace (ip netns) of the peer end"},
    "address": {"type": "string", "description": "address/prefix of the peer end, e.g. 10.0.0.1/24"},
    "mtu": {"type": "string", "pattern": "^[0-9]+$", "description": "MTU of both ends"}
  }
}`

// optionsDoc documents the port type for humans.
const optionsDoc = `A veth pair: the host end, named like the port, is attached to the bridge as an OVS "system"
interface (af_packet on a datapath_type=netdev bridge); the peer end gets options:peer (default
<port>-p), is moved into the named namespace options:netns (created when missing, unless the plugin
is configured otherwise) and gets options:address and options:mtu.`

// attachState is what Attach returns as Attachment.State; the host hands it back in
// PortRequest.State (replay, Detach).
type attachState struct {
	Version      int    `json:"v"`
	Peer         string `json:"peer"`
	Netns        string `json:"netns,omitempty"`
	CreatedNetns bool   `json:"created_netns,omitempty"`
}

// encodeState returns the state of a pair as Attach and List report it.
func encodeState(s veth.Spec) []byte {
	b, _ := json.Marshal(attachState{Version: 1, Peer: s.Peer, Netns: s.Netns, CreatedNetns: s.CreateNetns})
	return b
}

// decodeState reads a state; an empty or unreadable one is the zero state (the options still
// say what to build).
func decodeState(b []byte) attachState {
	var st attachState
	_ = json.Unmarshal(b, &st)
	return st
}

// specOf turns a port request into a pair spec and the problems of its options, with fields
// named as the host shows them ("name", "type", "options.<key>").
func (p *Plugin) specOf(req api.PortRequest, cfg Config) (veth.Spec, []api.Problem) {
	var problems []api.Problem
	if req.Type != PortType {
		problems = append(problems, api.Problem{Field: "type", Message: fmt.Sprintf("%q is not a type of this plugin (%s)", req.Type, PortType)})
	}
	spec := veth.Spec{Port: req.Name, Peer: req.Options[OptPeer], Netns: req.Options[OptNetns],
		CreateNetns: req.Options[OptNetns] != "" && cfg.createNetns(), MTU: cfg.DefaultMTU, Bridge: req.Bridge}
	if a, ok := req.Options[OptAddress]; ok && a != "" {
		pfx, err := netip.ParsePrefix(a)
		if err != nil {
			problems = append(problems, api.Problem{Field: "options." + OptAddress, Message: fmt.Sprintf("%q is not an address/prefix (CIDR), e.g. 10.0.0.1/24", a)})
		}
		spec.Address = pfx
	}
	if m, ok := req.Options[OptMTU]; ok && m != "" {
		n, err := strconv.Atoi(m)
		if err != nil {
			problems = append(problems, api.Problem{Field: "options." + OptMTU, Message: fmt.Sprintf("%q is not a number", m)})
		}
		spec.MTU = n
	}
	for _, k := range slices.Sorted(maps.Keys(req.Options)) {
		if !slices.Contains(knownOptions, k) {
			problems = append(problems, api.Problem{Field: "options." + k, Message: "unknown option (known: " + strings.Join(knownOptions, ", ") + ")"})
		}
	}
	var fe *veth.FieldError
	for _, err := range unjoin(spec.Validate()) {
		if !errors.As(err, &fe) {
			continue
		}
		field := "options." + fe.Field
		switch fe.Field {
		case "port":
			field = "name"
		case "bridge":
			field = "bridge"
		case "address", "mtu":
			if hasProblem(problems, field) { // already reported as unparsable
				continue
			}
		}
		problems = append(problems, api.Problem{Field: field, Message: fe.Reason})
	}
	return spec.WithDefaults(), problems
}

// Validate checks a port request without side effects: the options, then what the host
// looks like (a missing namespace the plugin may not create, the port's name taken by an
// interface the plugin does not own).
func (p *Plugin) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	spec, problems := p.specOf(req, cfg)
	if len(problems) > 0 {
		return problems, nil
	}
	if spec.Netns != "" && !spec.CreateNetns {
		if _, err := os.Stat(filepath.Join(p.netnsDir, spec.Netns)); err != nil {
			problems = append(problems, api.Problem{Field: "options." + OptNetns,
				Message: fmt.Sprintf("namespace %s does not exist and the plugin is configured not to create namespaces", spec.Netns)})
		}
	}
	if _, err := p.links.Get(spec.Port); errors.Is(err, veth.ErrNotOwned) {
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
	spec, problems := p.specOf(req, cfg)
	if len(problems) > 0 {
		return api.Attachment{}, &api.Error{Code: api.InvalidArgument,
			Message: fmt.Sprintf("port %s: %s", req.Name, joinProblems(problems)), Problems: problems}
	}
	if len(req.State) > 0 {
		p.log.Debug("replaying port", "port", req.Name, "state", string(req.State))
	}
	st, err := p.links.Ensure(ctx, spec)
	if err != nil {
		return api.Attachment{}, apiError(fmt.Sprintf("port %s", req.Name), err)
	}
	iface := api.OVSInterface{
		Name: spec.Port,
		Type: OVSInterfaceType,
		ExternalIDs: map[string]string{
			"veth-peer":  spec.Peer,
			"veth-netns": spec.Netns,
		},
	}
	if spec.MTU != 0 {
		mtu := spec.MTU
		iface.MTURequest = &mtu
	}
	endpoints := map[string]string{"peer": spec.Peer}
	if spec.Netns != "" {
		endpoints["netns"] = spec.Netns
	}
	if spec.Address.IsValid() {
		endpoints["address"] = spec.Address.String()
	}
	return api.Attachment{
		Ports:     []api.OVSPort{{Name: spec.Port, Interfaces: []api.OVSInterface{iface}}},
		State:     encodeState(st.Spec),
		Status:    status(st),
		Endpoints: endpoints,
	}, nil
}

// Detach deletes the port's pair, and its namespace when the plugin created it and it is
// empty. A port without a pair is already detached; an interface of that name the plugin did
// not create is refused (FailedPrecondition) and left alone.
func (p *Plugin) Detach(ctx context.Context, req api.PortRequest) error {
	if _, err := p.config(); err != nil {
		return err
	}
	st := decodeState(req.State)
	netns := st.Netns
	if netns == "" {
		netns = req.Options[OptNetns]
	}
	if err := p.links.Delete(ctx, req.Name, netns); err != nil {
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
	states, err := p.links.List()
	if err != nil {
		return nil, apiError("list", err)
	}
	out := make([]api.OwnedPort, 0, len(states))
	for _, st := range states {
		out = append(out, api.OwnedPort{Bridge: st.Spec.Bridge, Name: st.Spec.Port, Type: PortType,
			State: encodeState(st.Spec), Status: status(st)})
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

// unjoin splits an errors.Join result.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
