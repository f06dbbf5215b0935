package vdpa

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
)

// StateVersion is the version of State's JSON form.
const StateVersion = 1

// State is what Apply did for one port, for the plugin to persist (as JSON) and hand back to
// Plan, Apply and Teardown. Done lists the actions taken, oldest first, each with what it found
// before (From), so Teardown can undo exactly them.
type State struct {
	Version     int      `json:"version"`
	Request     Request  `json:"request"`
	PF          string   `json:"pf"`
	VF          string   `json:"vf"`
	VFIndex     int      `json:"vf_index"`
	Representor string   `json:"representor,omitempty"`
	Done        []Step   `json:"done"`
	Endpoint    Endpoint `json:"endpoint"`
	OVS         OVSPlan  `json:"ovs"`
	Process     *Process `json:"process,omitempty"`
}

// Apply carries out a plan. Every step re-reads the host and is skipped when already true; every
// change is appended to the returned state's Done (prev's records are kept), so applying a plan
// made after a successful Apply changes nothing. On failure the returned state still holds what
// was done, so the caller can persist it and tear it down.
func (h *Host) Apply(ctx context.Context, plan *Plan, prev *State) (*State, error) {
	st := &State{Version: StateVersion, Request: plan.Request, PF: plan.PF, VF: plan.VF, VFIndex: plan.VFIndex,
		Representor: plan.Representor, Endpoint: plan.Endpoint, OVS: plan.OVS, Process: plan.Process}
	if prev != nil {
		if prev.PF != plan.PF || prev.VF != plan.VF || prev.Request.Name != plan.Request.Name {
			return prev, newErr(CodeInvalidRequest, plan.Request.Name, nil,
				"the port's state is for %s VF %s (%s); tear it down before applying it to %s VF %s", prev.PF, prev.VF, prev.Request.Name, plan.PF, plan.VF)
		}
		st.Done = slices.Clone(prev.Done)
	}
	for _, s := range plan.Steps {
		if err := h.do(ctx, s, st); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (h *Host) record(st *State, s Step, from string) {
	s.From = from
	st.Done = append(st.Done, s)
	h.log.Info("vdpa: done", "op", s.Op, "object", s.Object, "from", from, "to", s.To, "driver", s.Driver)
}

// do verifies one step against the host and acts when needed.
func (h *Host) do(ctx context.Context, s Step, st *State) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch s.Op {
	case OpSetAttr:
		return h.doSetAttr(s, st)
	case OpPCIBind:
		cur := h.linkBase(pciDev(s.Object) + "/driver")
		if cur == s.Driver {
			return nil
		}
		if err := h.BindPCI(ctx, s.Object, s.Driver); err != nil {
			return err
		}
		h.record(st, s, cur)
	case OpPCIUnbind:
		if h.linkBase(pciDev(s.Object)+"/driver") != s.Driver {
			return nil
		}
		if err := h.UnbindPCI(ctx, s.Object, s.Driver); err != nil {
			return err
		}
		h.record(st, s, s.Driver)
	case OpEswitch:
		cur, err := h.devlink.EswitchMode(ctx, s.Object)
		if err == nil && cur == s.To {
			return nil
		}
		if err := h.SetEswitchMode(ctx, s.Object, s.To); err != nil {
			return err
		}
		h.record(st, s, cur)
	case OpVDPAAdd:
		return h.doAdd(ctx, s, st)
	case OpVDPAAdopt:
		if h.devParent(s.Object) != st.VF {
			return newErr(CodeExists, s.Object, nil, "vdpa device %s to adopt is no longer on VF %s", s.Object, st.VF)
		}
		h.record(st, s, "")
	case OpVDPABusDriver:
		return h.doBus(ctx, s, st)
	case OpWaitRepresentor:
		return h.doWaitRepresentor(ctx, st)
	case OpWaitCharDev:
		node, err := h.WaitCharDev(ctx, s.Object)
		if err != nil {
			return err
		}
		st.Endpoint = Endpoint{Kind: "vhost-vdpa", Path: node}
	case OpWaitNetdev:
		var nd string
		ok, err := h.waitFor(ctx, h.appear, func() bool { nd = h.virtioNetdev(s.Object); return nd != "" })
		if err != nil {
			return err
		}
		if !ok {
			return newErr(CodeKernel, s.Object, nil, "%s is bound to virtio_vdpa but no virtio netdev appeared within %s (is virtio_net loaded?)", s.Object, h.appear)
		}
		st.Endpoint = Endpoint{Kind: "netdev", Netdev: nd}
	default:
		return newErr(CodeInvalidRequest, s.Object, nil, "unknown step %q", s.Op)
	}
	return nil
}

func (h *Host) doSetAttr(s Step, st *State) error {
	cur := h.readString(s.Object)
	if cur == s.To {
		return nil
	}
	var err error
	if path.Base(s.Object) == "sriov_numvfs" {
		var n int
		if _, serr := fmt.Sscan(s.To, &n); serr != nil {
			return newErr(CodeInvalidRequest, s.Object, serr, "bad VF count %q", s.To)
		}
		err = h.writeNumVFs(path.Base(path.Dir(s.Object)), n)
	} else if werr := h.fs.WriteFile(s.Object, s.To); werr != nil {
		err = newErr(CodeKernel, s.Object, werr, "writing %s failed", s.To)
	}
	if err != nil {
		return err
	}
	h.record(st, s, cur)
	return nil
}

func (h *Host) devParent(name string) string {
	t, err := h.fs.ReadLink(vdpaDevices + "/" + name)
	if err != nil {
		return ""
	}
	return path.Base(path.Dir(t))
}

// doAdd waits for the VF's management device, creates the vdpa device and verifies that the
// kernel applied the requested configuration (kernels before 5.16/5.17 ignore it silently).
func (h *Host) doAdd(ctx context.Context, s Step, st *State) error {
	if parent := h.devParent(s.Object); parent == st.VF {
		return nil
	} else if parent != "" {
		return newErr(CodeExists, s.Object, nil, "a vdpa device named %s appeared on %s: choose another name", s.Object, parent)
	}
	bus, name, _ := strings.Cut(s.VDPA.MgmtDev, "/")
	id := MgmtDevID{Bus: bus, Name: name}
	var md *MgmtDev
	ok, err := h.waitFor(ctx, h.appear, func() bool {
		mds, err := h.vdpa.MgmtDevs(ctx)
		if err == nil {
			if i := slices.IndexFunc(mds, func(m MgmtDev) bool { return m.MgmtDevID == id }); i >= 0 {
				md = &mds[i]
			}
		}
		return md != nil
	})
	if err != nil {
		return err
	}
	if !ok {
		snap := &Snapshot{Modules: map[string]bool{"mlx5_vdpa": h.exists(sysModule + "/mlx5_vdpa")}}
		return noMgmtDevErr(name, snap)
	}
	if lim := md.MaxVQP(); s.VDPA.MaxVQP > 0 && lim > 0 && s.VDPA.MaxVQP > lim {
		return maxVQPErr(name, s.VDPA.MaxVQP, md.MaxVQs)
	}
	p := DevParams{MAC: parseMAC(s.VDPA.MAC), MTU: uint16(s.VDPA.MTU), MaxVQP: uint16(s.VDPA.MaxVQP)}
	if err := h.AddDevice(ctx, s.Object, id, p); err != nil {
		return err
	}
	h.record(st, s, "")
	return h.verifyConfig(ctx, s, st)
}

func (h *Host) verifyConfig(ctx context.Context, s Step, st *State) error {
	if s.VDPA.MAC == "" && s.VDPA.MTU == 0 && s.VDPA.MaxVQP == 0 {
		return nil
	}
	fam, err := h.vdpa.Family(ctx)
	if err != nil || !fam.HasOp(CmdDevConfigGet) {
		return nil // checked by the planner; nothing to read back
	}
	cfg, err := h.vdpa.DevConfig(ctx, s.Object)
	if err != nil {
		return newErr(CodeKernel, s.Object, err, "reading back the new device's configuration failed")
	}
	diff := configDiff(&cfg, Request{MAC: s.VDPA.MAC, MTU: s.VDPA.MTU, MaxVQP: s.VDPA.MaxVQP})
	if diff == "" {
		return nil
	}
	if err := h.DelDevice(ctx, s.Object); err == nil {
		st.Done = st.Done[:len(st.Done)-1]
	}
	return newErr(CodeAttrUnsupported, s.Object, nil,
		"the kernel created %s with %s: it ignored the requested configuration (mac/mtu need >= 5.16, max_vqp >= 5.17); the device was deleted", s.Object, diff)
}

func (h *Host) doBus(ctx context.Context, s Step, st *State) error {
	cur := h.BusDriver(s.Object)
	if cur == s.To {
		return nil
	}
	if cur != "" {
		if err := h.UnbindBus(ctx, s.Object, cur); err != nil {
			return err
		}
		h.record(st, Step{Op: OpVDPAUnbind, Scope: s.Scope, Object: s.Object, Driver: cur,
			What: "unbind " + s.Object + " from " + cur, Why: "it autoprobed to the other bus driver"}, "")
	}
	if err := h.BindBus(ctx, s.Object, s.To); err != nil {
		return err
	}
	h.record(st, Step{Op: OpVDPABind, Scope: s.Scope, Object: s.Object, Driver: s.To, What: s.What, Why: s.Why}, "")
	return nil
}

func (h *Host) doWaitRepresentor(ctx context.Context, st *State) error {
	var rep string
	var pf *PF
	ok, err := h.waitFor(ctx, h.appear, func() bool {
		p, err := h.ReadPF(ctx, st.PF)
		if err != nil {
			return false
		}
		pf = p
		for _, vf := range p.VFs {
			if vf.Index == st.VFIndex {
				rep = vf.Representor
			}
		}
		return rep != ""
	})
	if err != nil {
		return err
	}
	if !ok {
		if pf == nil {
			pf = &PF{Addr: st.PF}
		}
		return representorErr(pf, st.VFIndex)
	}
	st.Representor = rep
	return nil
}
