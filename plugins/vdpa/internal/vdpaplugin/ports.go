package vdpaplugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/vdpa"
)

// portOptions documents the options of a port of type vdpa for Info's JSON schema
// (sdk.OptionsSchema). Parsing is vdpa.RequestFromOptions'; a test keeps the two in step.
type portOptions struct {
	PF        string `option:"pf,required" doc:"the PF: PCI address (0000:65:00.0) or netdev"`
	VF        int    `option:"vf" doc:"VF index on the PF (default 0)"`
	MAC       string `option:"mac" doc:"the guest's MAC, set on the vDPA device (kernel >= 5.16) and as external_ids:attached-mac"`
	MTU       int    `option:"mtu" doc:"vDPA device MTU, 68-9978 (kernel >= 5.16)"`
	MaxVQP    int    `option:"max-vqp" doc:"virtqueue pairs of the vDPA device (kernel >= 5.17), at most max_supported_vqs/2"`
	Mode      string `option:"mode" doc:"kernel (default: /dev/vhost-vdpa-N), dpdk-pmd (a DPDK vDPA driver's vhost-user socket) or ovs-fork (NVIDIA OVS type=dpdkvdpa)"`
	NumVFs    int    `option:"num-vfs" doc:"VFs to enable when the PF has fewer than vf+1 (default vf+1); give every port of a PF the same"`
	Eswitch   string `option:"eswitch" doc:"switchdev (default) or skip (BlueField DPU mode)"`
	BusDriver string `option:"bus-driver" doc:"mode kernel: vhost_vdpa (default, for VMs) or virtio_vdpa (a host netdev)"`
	VDPAName  string `option:"vdpa-name" doc:"vDPA device name (default: the interface name)"`
	SocketDir string `option:"socket-dir" doc:"dpdk-pmd and ovs-fork: vhost-user socket directory (default /run/ovsplane/vdpa)"`
	HWOffload bool   `option:"hw-offload" doc:"false: this port does not need other_config:hw-offload=true (default true)"`
	Adopt     bool   `option:"adopt" doc:"true: take over an existing vDPA device of the same name, VF and configuration"`
}

// optionsDoc documents the port type for humans.
const optionsDoc = `An mlx5 vDPA port (ConnectX-6 Dx, BlueField in NIC mode). The plugin enables the PF's VFs,
puts its eswitch in switchdev mode, creates the VF's vDPA device (mode kernel) and reports the
guest's endpoint: /dev/vhost-vdpa-N (kernel), or the vhost-user socket of a DPDK vDPA driver process
(dpdk-pmd) or of NVIDIA's OVS (ovs-fork). OVS gets the VF representor, type=dpdk
options:dpdk-devargs=<PF>,representor=vf<N> (type=dpdkvdpa in mode ovs-fork). Detaching undoes
exactly what attaching did. Options: pf (required), vf, mac, mtu, max-vqp, mode, num-vfs, eswitch,
bus-driver, vdpa-name, socket-dir, hw-offload, adopt. See docs/vdpa.md.`

// port is what the plugin knows of one port: its last state (also after a failed Attach, so
// that a retry or Detach knows what was done) and status.
type port struct {
	bridge, name string
	state        *vdpa.State
	encoded      []byte
	status       string
}

func key(bridge, name string) string { return bridge + "/" + name }

// Validate checks a port request without side effects: its type, its options (each problem
// names the option and says what to write instead) and, for mode ovs-fork, whether the running
// OVS has the dpdkvdpa interface type.
func (p *Plugin) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) {
	cfg, facts, _, err := p.current()
	if err != nil {
		return nil, err
	}
	r, problems := requestOf(req)
	if len(problems) == 0 {
		problems = jobNameProblems(cfg, r)
	}
	if len(problems) == 0 && r.Mode == vdpa.ModeOVSFork && !facts.HasIfaceType("dpdkvdpa") {
		problems = append(problems, api.Problem{Field: "options.mode",
			Message: "ovs-fork needs NVIDIA's OVS (MLNX_OFED/DOCA), whose iface_types list dpdkvdpa; this OVS's do not: use mode kernel or dpdk-pmd (" + string(vdpa.CodeOVSNoDPDKVDPA) + ")"})
	}
	return problems, ctx.Err()
}

// requestOf parses a port request into a library request, or returns its problems.
func requestOf(req api.PortRequest) (vdpa.Request, []api.Problem) {
	var problems []api.Problem
	if req.Type != PortType {
		problems = append(problems, api.Problem{Field: "type", Message: fmt.Sprintf("%q is not a type of this plugin (%s)", req.Type, PortType)})
	}
	r, err := vdpa.RequestFromOptions(req.Name, req.Options)
	var e *vdpa.Error
	if errors.As(err, &e) {
		problems = append(problems, problemOf(e))
	}
	return r, problems
}

// problemOf turns an INVALID_REQUEST into a problem on the option it names.
func problemOf(e *vdpa.Error) api.Problem {
	field := "options"
	switch {
	case e.Field == "name":
		field = "name"
	case e.Field != "":
		field = "options." + e.Field
	}
	return api.Problem{Field: field, Message: e.Msg}
}

// Attach provisions the port and returns its OVS shape: one port named like the request with
// one interface, the VF representor (type=dpdk options:dpdk-devargs=<PF>,representor=vf<N>) or,
// in mode ovs-fork, type=dpdkvdpa. It plans against the live host and applies only what is not
// already true, so a second Attach, or a replay with the stored State after a restart, adopts
// what exists and changes nothing. The state is the library's vdpa.State (compacted when it
// would not fit api.MaxStateSize). After a failure the plugin keeps what was done, so that a
// retry continues and Detach undoes it.
func (p *Plugin) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	cfg, facts, k, err := p.current()
	if err != nil {
		return api.Attachment{}, err
	}
	r, problems := requestOf(req)
	if len(problems) == 0 {
		problems = jobNameProblems(cfg, r) // before any host work
	}
	if len(problems) > 0 {
		return api.Attachment{}, invalid(req.Name, problems)
	}
	if r.Mode == vdpa.ModeDPDKPMD && cfg.supervise() {
		if err := checkDPDKVDPA(cfg, req.Name); err != nil { // before any host work
			return api.Attachment{}, err
		}
	}
	prev, err := p.previous(req)
	if err != nil {
		return api.Attachment{}, err
	}
	release, err := p.lock(ctx)
	if err != nil {
		return api.Attachment{}, err
	}
	defer release()
	h := p.host(ctx, k)
	plan, err := h.Plan(ctx, r, p.ovsState(facts, req.Name), prev)
	if err != nil {
		return api.Attachment{}, apiError(req.Name, err)
	}
	st, err := h.Apply(ctx, plan, prev)
	if err != nil {
		if st != nil && len(st.Done) > doneCount(prev) {
			p.remember(&port{bridge: req.Bridge, name: req.Name, state: st, status: "attach failed: " + err.Error()})
		}
		return api.Attachment{}, apiError(req.Name, err)
	}
	encoded, err := encodeState(st)
	if err != nil {
		return api.Attachment{}, err
	}
	a, err := attachment(req.Name, st, cfg, k.Simulated)
	if err != nil {
		return api.Attachment{}, err
	}
	a.State = encoded
	p.remember(&port{bridge: req.Bridge, name: req.Name, state: st, encoded: encoded, status: a.Status})
	if len(plan.Steps) > 0 {
		p.log.Info("attached", "port", req.Name, "pf", st.PF, "vf", st.VF, "steps", len(plan.Steps), "endpoint", st.Endpoint.Path+st.Endpoint.Netdev)
	}
	return a, nil
}

func doneCount(st *vdpa.State) int {
	if st == nil {
		return 0
	}
	return len(st.Done)
}

// previous returns what the plugin did for the port before: its own record (the newest, also
// after a failed Attach) or else the stored State the daemon handed back (a replay after a
// restart); nil for a new port.
func (p *Plugin) previous(req api.PortRequest) (*vdpa.State, error) {
	p.mu.Lock()
	rec := p.ports[key(req.Bridge, req.Name)]
	p.mu.Unlock()
	if rec != nil {
		return rec.state, nil
	}
	if len(req.State) == 0 {
		return nil, nil
	}
	st, err := decodeState(req.State)
	if err != nil {
		return nil, api.Errorf(api.FailedPrecondition, "port %s/%s: stored plugin state: %w", req.Bridge, req.Name, err)
	}
	return st, nil
}

func (p *Plugin) remember(rec *port) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ports[key(rec.bridge, rec.name)] = rec
}

// ovsState describes the running OVS to the library: the facts from Configure and every
// interface that may use a VF (those the watcher saw and the plugin's own ports), except the
// port being planned.
func (p *Plugin) ovsState(facts api.HostFacts, except string) vdpa.OVSState {
	return vdpa.OVSState{Running: facts.OVSVersion != "", DPDKInitialized: facts.DPDKInitialized,
		DPDKVersion: facts.DPDKVersion, OVSVersion: facts.OVSVersion, IfaceTypes: facts.IfaceTypes,
		Interfaces: p.interfaces(except)}
}

// interfaces lists the known interfaces but except, sorted by name.
func (p *Plugin) interfaces(except string) []vdpa.OVSInterface {
	p.mu.Lock()
	defer p.mu.Unlock()
	byName := maps.Clone(p.watched)
	for _, rec := range p.ports {
		if ifc := rec.state.OVS.Interface; ifc.Name != "" {
			byName[ifc.Name] = ifc
		} else if rec.state.VF != "" { // a compacted state: the VF is still known
			byName[rec.name] = vdpa.OVSInterface{Name: rec.name, ExternalIDs: map[string]string{"vdpa-vf": rec.state.VF}}
		}
	}
	delete(byName, except)
	out := make([]vdpa.OVSInterface, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out
}

// attachment builds the OVS shape, endpoints, status and, for a dpdk-pmd port whose driver the
// plugin supervises, the data-path job of an applied port.
func attachment(name string, st *vdpa.State, cfg Config, simulated string) (api.Attachment, error) {
	ifc := st.OVS.Interface
	op := sdk.SinglePort(name, ifc.Type, maps.Clone(ifc.Options))
	op.Interfaces[0].ExternalIDs = maps.Clone(ifc.ExternalIDs)
	a := api.Attachment{Ports: []api.OVSPort{op}, Status: status(st, cfg, simulated), Endpoints: endpoints(st, cfg)}
	if st.Process != nil && cfg.supervise() {
		job, err := jobOf(st)
		if err != nil {
			return api.Attachment{}, err
		}
		a.Jobs = []api.Job{job}
	}
	return a, nil
}

// endpoints says what the guest (and the operator) attach to.
func endpoints(st *vdpa.State, cfg Config) map[string]string {
	e := map[string]string{}
	switch st.Endpoint.Kind {
	case "vhost-vdpa", "vhost-user":
		e[st.Endpoint.Kind] = st.Endpoint.Path
	case "netdev":
		e["netdev"] = st.Endpoint.Netdev
	}
	if st.Representor != "" {
		e["representor"] = st.Representor
	}
	switch {
	case st.Process != nil && cfg.supervise():
		e["dpdk-vdpa-job"] = jobPrefix + st.Request.Name
	case st.Process != nil:
		e["dpdk-vdpa"] = strings.Join(st.Process.Argv, " ")
	}
	return e
}

// status is one line for humans: mode, VF, representor, endpoint, the helper process (its job,
// or the command to run when the plugin does not supervise it) and the hw-offload situation;
// prefixed loudly in simulation.
func status(st *vdpa.State, cfg Config, simulated string) string {
	var b strings.Builder
	if simulated != "" {
		fmt.Fprintf(&b, "SIMULATED (fixture %s, no hardware touched): ", simulated)
	}
	fmt.Fprintf(&b, "%s vDPA on VF %d (%s) of %s", st.Request.Mode, st.VFIndex, st.VF, st.PF)
	if st.Representor != "" {
		fmt.Fprintf(&b, ", representor %s", st.Representor)
	}
	switch e := st.Endpoint; {
	case e.Path != "":
		fmt.Fprintf(&b, ", guest %s %s", e.Kind, e.Path)
	case e.Netdev != "":
		fmt.Fprintf(&b, ", host netdev %s", e.Netdev)
	}
	switch {
	case st.Process != nil && cfg.supervise():
		fmt.Fprintf(&b, "; DPDK vDPA driver %s supervised as job %s%s", cfg.DPDKVDPA, jobPrefix, st.Request.Name)
	case st.Process != nil:
		fmt.Fprintf(&b, "; run the DPDK vDPA driver: %s", strings.Join(st.Process.Argv, " "))
	}
	if st.OVS.RestartRequired {
		// The plugin cannot read Open_vSwitch other_config (the daemon's facts do not carry
		// it), so it cannot tell whether the key changed: it says what it knows.
		if cfg.hwOffload() {
			b.WriteString("; other_config:hw-offload=true contributed by the plugin: ovs-vswitchd restart required unless it was already true")
		} else {
			b.WriteString("; needs other_config:hw-offload=true (plugin config hw_offload is false: set it yourself): ovs-vswitchd restart required after setting it")
		}
	}
	return b.String()
}

// Detach stops the port's dpdk-vdpa job, if it runs, and undoes what Attach did for the port,
// newest first, from the plugin's record or the stored State: port work always, PF-wide work (VF count, eswitch mode, VF binding) only when no
// other port or interface uses the PF. A port with neither record nor state is already
// detached. After a failure the plugin keeps what remains to undo, so that a retry continues.
func (p *Plugin) Detach(ctx context.Context, req api.PortRequest) error {
	_, _, k, err := p.current()
	if err != nil {
		return err
	}
	st, err := p.previous(req)
	if err != nil || st == nil {
		return err
	}
	// The daemon stops the port's job when it removes the port; stop it here too, whatever the
	// order, so that no driver holds the VF while its host work is undone.
	if err := p.sup.Stop(ctx, jobPrefix+req.Name); err != nil {
		return api.Errorf(api.Unavailable, "port %s: stop its dpdk-vdpa job before detaching: %w", req.Name, err)
	}
	release, err := p.lock(ctx)
	if err != nil {
		return err
	}
	defer release()
	rep, err := p.host(ctx, k).Teardown(ctx, st, vdpa.TeardownOptions{OVS: p.interfaces(req.Name)})
	if err != nil {
		rest := *st
		rest.Done = rep.Remaining
		p.remember(&port{bridge: req.Bridge, name: req.Name, state: &rest, status: "detach failed: " + err.Error()})
		return apiError(req.Name, err)
	}
	for _, kept := range rep.Kept {
		p.log.Info("detach: kept", "port", req.Name, "op", kept.Step.Op, "object", kept.Step.Object, "reason", kept.Reason)
	}
	p.mu.Lock()
	delete(p.ports, key(req.Bridge, req.Name))
	p.mu.Unlock()
	p.log.Info("detached", "port", req.Name, "undone", len(rep.Undone), "kept", len(rep.Kept))
	return nil
}

// List returns the ports the plugin knows: attached ones, and ones whose Attach or Detach
// failed half way (their state holds what remains to undo).
func (p *Plugin) List(ctx context.Context) ([]api.OwnedPort, error) {
	if _, _, _, err := p.current(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	recs := make([]*port, 0, len(p.ports))
	for _, k := range slices.Sorted(maps.Keys(p.ports)) {
		recs = append(recs, p.ports[k])
	}
	p.mu.Unlock()
	out := make([]api.OwnedPort, 0, len(recs))
	for _, rec := range recs {
		state := rec.encoded
		if state == nil {
			var err error
			if state, err = encodeState(rec.state); err != nil {
				return nil, err
			}
		}
		out = append(out, api.OwnedPort{Bridge: rec.bridge, Name: rec.name, Type: PortType, State: state, Status: rec.status})
	}
	return out, ctx.Err()
}
