package stripeplugin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/link"
	"github.com/ovsplane/ovsplane/stripe/ovslane"
)

// The link modes of a job (Config.Mode).
const (
	// ModeKernel opens each link's interface, a kernel NIC, with AF_PACKET (the default).
	ModeKernel = "kernel"
	// ModeOVSDPDK leaves the NICs to ovs-vswitchd (DPDK or system ports of Config.Bridge): the
	// engine opens each link's lane, an internal port of the bridge, and the plugin's flows bind
	// lane i to NIC i (stripe/ovslane).
	ModeOVSDPDK = "ovs-dpdk"
	// LaneKindVeth (Config.LaneKind) says the lanes are veth pairs (a stripe-lanes object of
	// kind dpdk or system): the engine opens VethPeer(lane), the pair's other end.
	LaneKindVeth = "veth"
)

// ovsMode reports whether the job runs in OVS-DPDK link mode.
func (c *Config) ovsMode() bool { return c.Mode == ModeOVSDPDK }

// checkMode validates the link-mode fields: mode, bridge, each link's lane and pace_mbit, and
// pace (which the ovs-dpdk mode replaces with per-link pacing).
func (c *Config) checkMode() error {
	switch c.Mode {
	case "", ModeKernel:
		if c.Bridge != "" {
			return problem("config.bridge", "set in kernel mode: a bridge belongs to mode ovs-dpdk; remove it or set mode: ovs-dpdk")
		}
		if c.LaneKind != "" {
			return problem("config.lane_kind", "set in kernel mode: lanes belong to mode ovs-dpdk; remove it or set mode: ovs-dpdk")
		}
	case ModeOVSDPDK:
		if err := link.CheckInterfaceName(c.Bridge); err != nil {
			return problem("config.bridge", "%q: %v: name the OVS bridge holding the NICs and the lanes", clip(c.Bridge), err)
		}
		if c.Pace {
			return problem("config.pace", "set in mode ovs-dpdk, which paces every link at its pace_mbit (default: its capacity_mbit): remove pace")
		}
		if c.LaneKind != "" && c.LaneKind != LaneKindInternal && c.LaneKind != LaneKindVeth {
			return problem("config.lane_kind", "%q: want internal (the default) or veth (lanes of a stripe-lanes object of kind dpdk or system)", clip(c.LaneKind))
		}
		if c.RxRing {
			return problem("config.rx_ring", "set in mode ovs-dpdk: a lane is a tap device, which fills no TPACKET ring faster than recvfrom; remove rx_ring")
		}
	default:
		return problem("config.mode", "%q: want kernel (the default) or ovs-dpdk", clip(c.Mode))
	}
	names := map[string]string{}
	for i, l := range c.Links {
		names[l.Interface] = fmt.Sprintf("links[%d].interface", i)
	}
	for i, l := range c.Links {
		f := fmt.Sprintf("config.links[%d]", i)
		if !c.ovsMode() && l.Lane != "" {
			return problem(f+".lane", "set in kernel mode: lanes belong to mode ovs-dpdk; remove it or set mode: ovs-dpdk")
		}
		if c.ovsMode() {
			if err := link.CheckInterfaceName(c.device(i)); err != nil {
				return problem(f+".lane", "%q: %v: name the lane (a port of bridge %s, made by a port of type %s) bound to NIC %s", clip(l.Lane), err, c.Bridge, LanesType, l.Interface)
			}
			if prev, dup := names[l.Lane]; dup {
				return problem(f+".lane", "%s is also %s: each NIC and lane once", l.Lane, prev)
			}
			names[l.Lane] = fmt.Sprintf("links[%d].lane", i)
		}
		if l.PaceMbit < 0 || l.PaceMbit > MaxCapacityMbit || math.IsNaN(l.PaceMbit) {
			return problem(f+".pace_mbit", "%v: want more than 0 and at most %v Mbit/s (or leave it out: no pacing in kernel mode, capacity_mbit in ovs-dpdk mode)", l.PaceMbit, MaxCapacityMbit)
		}
	}
	return nil
}

// device is the kernel device link i's engine link opens: in ovs-dpdk mode the lane, or its
// veth peer for veth lanes; the NIC otherwise.
func (c *Config) device(i int) string {
	if c.ovsMode() && c.LaneKind == LaneKindVeth {
		return VethPeer(c.Links[i].Lane)
	}
	if c.ovsMode() {
		return c.Links[i].Lane
	}
	return c.Links[i].Interface
}

// paceBytes is link i's pacing rate in bytes per second; 0 for none.
func (c *Config) paceBytes(i int) float64 {
	mbit := c.Links[i].PaceMbit
	if mbit == 0 && c.ovsMode() {
		mbit = c.capacityMbit(i)
	}
	return mbit * 1e6 / 8
}

// laneSpec is the job's bindings for stripe/ovslane.
func (c *Config) laneSpec() ovslane.Spec {
	s := ovslane.Spec{Bridge: c.Bridge}
	for _, l := range c.Links {
		s.Bindings = append(s.Bindings, ovslane.Binding{NIC: l.Interface, Lane: l.Lane})
	}
	return s
}

// describeMode is Describe's line for the link mode and pacing.
func (c *Config) describeMode() string {
	if !c.ovsMode() {
		var paced []string
		for i, l := range c.Links {
			if l.PaceMbit > 0 {
				paced = append(paced, fmt.Sprintf("%s at %v Mbit/s", c.device(i), l.PaceMbit))
			}
		}
		if len(paced) == 0 {
			return "mode kernel\n"
		}
		return "mode kernel, paced: " + strings.Join(paced, ", ") + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mode ovs-dpdk on bridge %s", c.Bridge)
	if c.LaneKind == LaneKindVeth {
		b.WriteString(", veth lanes")
	}
	b.WriteString("\n")
	for i, l := range c.Links {
		fmt.Fprintf(&b, "lane %d: %s ↔ NIC %s, paced at %v Mbit/s\n", i, l.Lane, l.Interface, c.paceBytes(i)*8/1e6)
	}
	return b.String()
}

// openLink opens link i of the job's engine towards peer in the current namespace: the lane
// (set up first) in ovs-dpdk mode, the NIC otherwise, taking only peer's frames, wrapped in an
// ovslane.PacedLink when it is paced.
func openLink(ctx context.Context, cfg Config, i int, peer uint32) (link.Link, error) {
	dev := cfg.device(i)
	if cfg.ovsMode() {
		if err := ovslane.Up(dev); err != nil {
			return nil, fmt.Errorf("%w: is it a lane of bridge %s (a port of type %s)?", err, cfg.Bridge, LanesType)
		}
	}
	l, err := link.Open(ctx, link.Config{Interface: dev, RxRing: cfg.RxRing, PeerNode: peer})
	if err != nil {
		return nil, err
	}
	rate := cfg.paceBytes(i)
	if rate == 0 {
		return l, nil
	}
	p, err := ovslane.Pace(l, rate)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	return p, nil
}

// ovsState is what the plugin knows of the bridges its ovs-dpdk jobs use: the facts of each
// bridge's last Flows call, and each job's flow problem.
type ovsState struct {
	facts    map[string]api.BridgeFacts // by bridge
	problems map[string]string          // by job: why its rules are not on its bridge
}

// checkOVS refuses, before anything is opened, an ovs-dpdk job whose NICs or lanes another
// job of the plugin binds, or whose bindings the bridge's last known facts refuse (a NIC not
// on the bridge, a NIC or lane another plugin owns). FailedPrecondition, naming the field.
func (p *Plugin) checkOVS(name string, cfg Config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ovs.problems, name) // the next Flows call judges the new configuration
	if !cfg.ovsMode() {
		return nil
	}
	for other, j := range p.jobs {
		if other == name || !j.cfg.ovsMode() || j.cfg.Bridge != cfg.Bridge || j.cfg.Netns != cfg.Netns {
			continue
		}
		for i, l := range cfg.Links {
			for _, ol := range j.cfg.Links {
				for _, n := range []struct{ field, name string }{{"interface", l.Interface}, {"lane", l.Lane}} {
					if n.name == ol.Interface || n.name == ol.Lane {
						return api.Errorf(api.FailedPrecondition, "job %s: config.links[%d].%s %s on bridge %s is already owned by stripe job %s: give each job NICs and lanes of its own", name, i, n.field, n.name, cfg.Bridge, other)
					}
				}
			}
		}
	}
	facts, known := p.ovs.facts[cfg.Bridge]
	if !known {
		return nil // the next Flows call checks it; Health reports a refusal
	}
	if _, err := ovslane.Flows(cfg.laneSpec(), facts, Name); errors.Is(err, ovslane.ErrRefused) {
		return api.Errorf(api.FailedPrecondition, "job %s: config.links: %v", name, err)
	}
	return nil
}

// Flows returns the rules of every running ovs-dpdk job on the bridge: each job's bindings all
// or none (a refused job's problem shows in Health). It asks to be called again after a second
// while a job's rules are missing, and every five seconds while the bridge holds lanes or a job
// uses it, so a job started between two bridge changes gets its rules.
func (p *Plugin) Flows(_ context.Context, bridge api.BridgeFacts) (api.FlowSet, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ovs.facts == nil {
		p.ovs.facts, p.ovs.problems = map[string]api.BridgeFacts{}, map[string]string{}
	}
	p.ovs.facts[bridge.Name] = bridge
	var fs api.FlowSet
	names := make([]string, 0, len(p.jobs))
	for name, j := range p.jobs {
		if j.cfg.ovsMode() && j.cfg.Bridge == bridge.Name {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	pending := false
	for _, name := range names {
		flows, err := ovslane.Flows(p.jobs[name].cfg.laneSpec(), bridge, Name)
		if err != nil {
			p.ovs.problems[name] = fmt.Sprintf("job %s: no rules on bridge %s: %v", name, bridge.Name, err)
			pending = true
			continue
		}
		delete(p.ovs.problems, name)
		fs.Flows = append(fs.Flows, flows...)
	}
	hasLanes := slices.ContainsFunc(bridge.Ports, func(bp api.BridgePort) bool { return bp.Plugin == Name })
	switch {
	case pending:
		fs.RefreshMillis = 1000
	case hasLanes || len(names) > 0:
		fs.RefreshMillis = 5000
	}
	return fs, nil
}

// ovsProblems are the ovs-dpdk jobs' flow problems for Health, sorted.
func (p *Plugin) ovsProblems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for name, msg := range p.ovs.problems {
		if p.jobs[name] != nil {
			out = append(out, msg)
		}
	}
	slices.Sort(out)
	return out
}
