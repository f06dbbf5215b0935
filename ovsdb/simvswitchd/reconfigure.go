package simvswitchd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// maxConflicts bounds how often one pass recomputes after a conflict.
const maxConflicts = 10

// errConflict marks a transaction whose wait guard failed because next_cfg
// moved between the snapshot and the write.
var errConflict = errors.New("next_cfg changed during reconfiguration")

// snapshot is a consistent copy of the tables ovs-vswitchd configures from,
// read in a single transaction.
type snapshot struct {
	ovs     *vswitch.OpenvSwitch // nil before `ovs-vsctl init`
	bridges []*vswitch.Bridge    // sorted by name
	ports   map[string]*vswitch.Port
	ifaces  map[string]*vswitch.Interface
}

// reconfigure runs one pass: snapshot, compute, write in one transaction,
// recomputing when the write conflicts with a concurrent next_cfg change.
// It returns the committed reconfiguration, or nil if nothing was written.
func (v *Switch) reconfigure(ctx context.Context, c client.Client) (*Reconfiguration, error) {
	for range maxConflicts {
		v.mu.Lock()
		paused, ack := v.paused, !v.ackPaused
		v.mu.Unlock()
		if paused {
			return nil, nil
		}
		snap, err := readSnapshot(ctx, c, v.dbModel)
		if err != nil {
			return nil, err
		}
		if snap.ovs == nil {
			return nil, nil // like ovs-vswitchd, wait for the Open_vSwitch row
		}
		p := v.plan(snap, ack)
		if p.empty() {
			return nil, nil
		}
		err = p.commit(ctx, c)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return v.committed(p), nil
	}
	return nil, fmt.Errorf("simvswitchd: %w %d times in a row", errConflict, maxConflicts)
}

// committed records a successful reconfiguration.
func (v *Switch) committed(p *plan) *Reconfiguration {
	maps.Copy(v.allocated, p.allocated)
	v.mu.Lock()
	v.seq++
	r := &Reconfiguration{Seq: v.seq, NextCfg: p.nextCfg, Acked: p.ack, Changed: p.changedNames(), Errors: p.errors}
	v.mu.Unlock()
	v.log.Debug("vswitchd reconfigured", "seq", r.Seq, "next_cfg", r.NextCfg, "acked", r.Acked, "changed", r.Changed)
	return r
}

// readSnapshot selects the four tables in one transaction, so the result is
// one consistent database state (the client cache may be mid-update).
func readSnapshot(ctx context.Context, c client.Client, clientModel model.ClientDBModel) (*snapshot, error) {
	tables := []string{vswitch.OpenvSwitchTable, vswitch.BridgeTable, vswitch.PortTable, vswitch.InterfaceTable}
	ops := make([]ovsdb.Operation, len(tables))
	for i, table := range tables {
		ops[i] = ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table}
	}
	res, err := c.Transact(ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		return nil, fmt.Errorf("simvswitchd: read configuration: %w", err)
	}
	dbModel, errs := model.NewDatabaseModel(c.Schema(), clientModel)
	if len(errs) > 0 {
		return nil, fmt.Errorf("simvswitchd: database model: %w", errors.Join(errs...))
	}
	snap := &snapshot{ports: map[string]*vswitch.Port{}, ifaces: map[string]*vswitch.Interface{}}
	for i, table := range tables {
		for _, row := range res[i].Rows {
			id, ok := row["_uuid"].(ovsdb.UUID)
			if !ok {
				return nil, fmt.Errorf("simvswitchd: %s row without _uuid", table)
			}
			m, err := model.CreateModel(dbModel, table, &row, id.GoUUID)
			if err != nil {
				return nil, fmt.Errorf("simvswitchd: decode %s row %s: %w", table, id.GoUUID, err)
			}
			snap.add(m)
		}
	}
	slices.SortFunc(snap.bridges, func(a, b *vswitch.Bridge) int { return strings.Compare(a.Name, b.Name) })
	return snap, nil
}

func (s *snapshot) add(m model.Model) {
	switch r := m.(type) {
	case *vswitch.OpenvSwitch:
		s.ovs = r
	case *vswitch.Bridge:
		s.bridges = append(s.bridges, r)
	case *vswitch.Port:
		s.ports[r.UUID] = r
	case *vswitch.Interface:
		s.ifaces[r.UUID] = r
	}
}

// commit writes the plan in one transaction guarded by a wait on next_cfg.
func (p *plan) commit(ctx context.Context, c client.Client) error {
	ops, err := p.operations(c)
	if err != nil {
		return err
	}
	res, err := c.Transact(ctx, ops...)
	if err != nil {
		return fmt.Errorf("simvswitchd: reconfigure (next_cfg %d): %w", p.nextCfg, err)
	}
	opErrs, err := ovsdb.CheckOperationResults(res, ops)
	for _, e := range opErrs {
		var timedOut *ovsdb.TimedOut
		if errors.As(e, &timedOut) && e.Operation().Op == ovsdb.OperationWait {
			return errConflict
		}
	}
	if err != nil {
		return fmt.Errorf("simvswitchd: reconfigure (next_cfg %d): %w", p.nextCfg, errors.Join(append([]error{err}, asErrors(opErrs)...)...))
	}
	return nil
}

func asErrors(opErrs []ovsdb.OperationError) []error {
	out := make([]error, len(opErrs))
	for i, e := range opErrs {
		out[i] = e
	}
	return out
}

// operations builds the transaction with libovsdb's API: a wait guarding the
// next_cfg the plan was computed from, then one update per changed row.
func (p *plan) operations(c client.Client) ([]ovsdb.Operation, error) {
	zero := 0
	guard := &vswitch.OpenvSwitch{UUID: p.ovsUUID, NextCfg: p.nextCfg}
	ops, err := c.Where(guard).Wait(ovsdb.WaitConditionEqual, &zero, guard, &guard.NextCfg)
	if err != nil {
		return nil, fmt.Errorf("simvswitchd: build wait: %w", err)
	}
	for _, u := range p.ifaces {
		more, err := c.Where(&vswitch.Interface{UUID: u.row.UUID}).Update(u.row, u.fields...)
		if err != nil {
			return nil, fmt.Errorf("simvswitchd: update interface %s: %w", u.row.Name, err)
		}
		ops = append(ops, more...)
	}
	if len(p.ovsFields) > 0 {
		more, err := c.Where(&vswitch.OpenvSwitch{UUID: p.ovsUUID}).Update(p.ovs, p.ovsFields...)
		if err != nil {
			return nil, fmt.Errorf("simvswitchd: update Open_vSwitch: %w", err)
		}
		ops = append(ops, more...)
	}
	return ops, nil
}
