package vdpa

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// TeardownOptions tune what Teardown may undo.
type TeardownOptions struct {
	// KeepPF leaves the PF-wide records (VF count, eswitch mode, VF binding) in place, for a
	// caller that knows other ports use the PF.
	KeepPF bool
	// OVS are the Interface rows the caller knows of; one that uses another VF of the PF keeps
	// the PF-wide records too.
	OVS []OVSInterface
}

// Kept is a record Teardown did not undo, and why.
type Kept struct {
	Step   Step   `json:"step"`
	Reason string `json:"reason"`
}

// TeardownReport says what Teardown undid (in the order it undid them) and what it left.
type TeardownReport struct {
	Undone []Step `json:"undone"`
	Kept   []Kept `json:"kept,omitempty"`
	// Remaining are the records still to undo after a failure (oldest first): persist them in
	// State.Done and retry.
	Remaining []Step `json:"remaining,omitempty"`
}

// Teardown undoes st.Done newest first: port records always, PF-wide records only when no other
// consumer uses the PF (another vdpa device on its VFs, a VF bound to another driver, an OVS
// interface on one of its VFs) and opts.KeepPF is false. A record whose object changed since
// (someone else's change) is kept, not forced. It touches nothing it did not record.
func (h *Host) Teardown(ctx context.Context, st *State, opts TeardownOptions) (*TeardownReport, error) {
	rep := &TeardownReport{}
	var port, pf []int
	for i := len(st.Done) - 1; i >= 0; i-- {
		if st.Done[i].Scope == ScopePF {
			pf = append(pf, i)
		} else {
			port = append(port, i)
		}
	}
	undone := map[int]bool{}
	fail := func(err error) (*TeardownReport, error) {
		for i, s := range st.Done {
			if !undone[i] && !slices.ContainsFunc(rep.Kept, func(k Kept) bool { return k.Step == s }) {
				rep.Remaining = append(rep.Remaining, s)
			}
		}
		return rep, err
	}
	for _, i := range port {
		if err := h.undo(ctx, st, st.Done[i], rep); err != nil {
			return fail(err)
		}
		undone[i] = true
	}
	if len(pf) == 0 {
		return rep, nil
	}
	reason := ""
	if opts.KeepPF {
		reason = "kept on request (other ports use the PF)"
	} else if p, err := h.ReadPF(ctx, st.PF); err == nil {
		p.VFs = h.withDevices(ctx, p.VFs)
		if c := pfConsumers(p, opts.OVS, st.Request.Name); len(c) > 0 {
			reason = "PF still in use by " + strings.Join(c, ", ")
		}
	}
	for _, i := range pf {
		if reason != "" {
			rep.Kept = append(rep.Kept, Kept{Step: st.Done[i], Reason: reason})
			continue
		}
		if err := h.undo(ctx, st, st.Done[i], rep); err != nil {
			return fail(err)
		}
		undone[i] = true
	}
	return rep, nil
}

// withDevices fills each VF's vdpa devices from sysfs.
func (h *Host) withDevices(ctx context.Context, vfs []VF) []VF {
	devs := h.Devices(ctx, nil)
	for i := range vfs {
		for _, d := range devs {
			if d.Parent == vfs[i].Addr {
				vfs[i].Devices = append(vfs[i].Devices, d.Name)
			}
		}
	}
	return vfs
}

// undo inverts one record if the host still shows what the record left; otherwise it keeps it.
func (h *Host) undo(ctx context.Context, st *State, s Step, rep *TeardownReport) error {
	keep := func(format string, args ...any) error {
		rep.Kept = append(rep.Kept, Kept{Step: s, Reason: fmt.Sprintf(format, args...)})
		return nil
	}
	var err error
	switch s.Op {
	case OpSetAttr:
		cur := h.readString(s.Object)
		if cur != s.To {
			return keep("%s is now %q, not %q as left: changed by someone else", s.Object, cur, s.To)
		}
		err = h.doSetAttr(Step{Op: OpSetAttr, Object: s.Object, To: s.From}, &State{})
	case OpPCIBind:
		if h.linkBase(pciDev(s.Object)+"/driver") != s.Driver {
			return keep("%s is no longer bound to %s", s.Object, s.Driver)
		}
		err = h.UnbindPCI(ctx, s.Object, s.Driver)
	case OpPCIUnbind:
		if !h.exists(pciDev(s.Object)) || h.linkBase(pciDev(s.Object)+"/driver") != "" {
			return keep("%s is gone or bound again", s.Object)
		}
		err = h.BindPCI(ctx, s.Object, s.Driver)
	case OpEswitch:
		cur, gerr := h.devlink.EswitchMode(ctx, s.Object)
		if gerr != nil || cur != s.To {
			return keep("eswitch of %s is %q, not %q as left", s.Object, cur, s.To)
		}
		err = h.SetEswitchMode(ctx, s.Object, s.From)
	case OpVDPAAdd, OpVDPAAdopt:
		if h.devParent(s.Object) != st.VF {
			return keep("vdpa device %s is not on %s any more", s.Object, st.VF)
		}
		err = h.DelDevice(ctx, s.Object)
	case OpVDPABind:
		if h.BusDriver(s.Object) != s.Driver {
			return keep("%s is not bound to %s", s.Object, s.Driver)
		}
		err = h.UnbindBus(ctx, s.Object, s.Driver)
	case OpVDPAUnbind:
		if h.devParent(s.Object) == "" || h.BusDriver(s.Object) != "" {
			return keep("%s is gone or bound", s.Object)
		}
		err = h.BindBus(ctx, s.Object, s.Driver)
	default:
		return keep("nothing to undo for %s", s.Op)
	}
	if err != nil {
		return err
	}
	rep.Undone = append(rep.Undone, s)
	h.log.Info("vdpa: undone", "op", s.Op, "object", s.Object)
	return nil
}
