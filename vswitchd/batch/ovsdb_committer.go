package batch

import (
	"context"
	"errors"
	"fmt"

	"github.com/ovsplane/ovsplane/ovsdb"
)

// PortDB is what PortCommitter needs from OVSDB; *ovsdb.Client implements it.
type PortDB interface {
	NewTxn(gen int64) *ovsdb.Txn
	// Interface returns the cached state of an interface (for ports the transaction left as
	// they were, whose state Commit does not report).
	Interface(name string) (ovsdb.InterfaceState, error)
}

// PortRequest asks for one port to exist as Spec says, or, with Delete, to be absent (only
// Spec.Bridge, which may be "", and Spec.Port.Name are used then).
type PortRequest struct {
	Delete bool
	Spec   ovsdb.PortOn
}

// PortResult is what ovs-vswitchd reports for the interfaces of an ensured port, in the order
// of the spec (empty for a delete). Each interface has its ofport.
type PortResult struct {
	Interfaces []ovsdb.InterfaceState
}

// PortCommitter commits a batch of PortRequests as ONE ovsdb.Txn, so ovs-vswitchd reconfigures
// once and acknowledges once (next_cfg/cur_cfg) per batch, and maps the outcome back to each
// request:
//   - the port's interfaces and their ofports, or an *ovsdb.ApplyError (errors.Is
//     ovsdb.ErrVswitchd) naming those of its interfaces ovs-vswitchd refused; only that request
//     fails, the transaction stays committed for its neighbours;
//   - an *ovsdb.OpError refusing the whole transaction before anything was written (spec error,
//     ownership refusal, missing bridge, constraint violation) is returned as an *ItemError
//     naming the requests whose port, interface or bridge the error names, so the Batcher fails
//     those and commits the rest again; when it names none, Divisible lets the Batcher bisect;
//   - any other error (lost connection, ovs-vswitchd not acknowledging in time) fails the whole
//     batch: the outcome is unknown or transient, and retrying is the reconciler's decision.
type PortCommitter struct {
	DB PortDB
	// Generation tags the rows written (ovsdb.GenerationKey).
	Generation int64
	// Options are passed to every Commit; NoWait must stay false to get ofports.
	Options ovsdb.CommitOptions
	// OnResult, if set, receives the Result of every commit that happened (for timings).
	OnResult func(*ovsdb.Result)
}

var _ Committer[PortRequest, PortResult] = (*PortCommitter)(nil)

// Commit implements Committer.
func (p *PortCommitter) Commit(ctx context.Context, reqs []PortRequest) ([]Outcome[PortResult], error) {
	txn := p.DB.NewTxn(p.Generation)
	for _, r := range reqs {
		if r.Delete {
			txn.DeletePort(r.Spec.Bridge, r.Spec.Port.Name)
		} else {
			txn.EnsurePort(r.Spec)
		}
	}
	res, err := txn.Commit(ctx, p.Options)
	if res != nil && p.OnResult != nil {
		p.OnResult(res)
	}
	var applyErr *ovsdb.ApplyError
	if err != nil && !(errors.As(err, &applyErr) && res != nil) {
		if idx := culprits(err, reqs); len(idx) > 0 {
			return nil, &ItemError{Indexes: idx, Err: err}
		}
		return nil, err
	}
	states := map[string]ovsdb.InterfaceState{}
	for _, st := range res.Interfaces {
		states[st.Name] = st
	}
	failed := map[string]string{}
	if applyErr != nil {
		for _, ie := range applyErr.Interfaces {
			failed[ie.Interface] = ie.Message
		}
	}
	out := make([]Outcome[PortResult], len(reqs))
	for i, r := range reqs {
		if r.Delete {
			continue
		}
		out[i] = p.portOutcome(r.Spec, states, failed)
	}
	return out, nil
}

func (p *PortCommitter) portOutcome(spec ovsdb.PortOn, states map[string]ovsdb.InterfaceState,
	failed map[string]string) Outcome[PortResult] {
	var o Outcome[PortResult]
	var errs []ovsdb.InterfaceError
	for _, name := range ifaceNames(spec) {
		st, ok := states[name]
		if !ok { // unchanged by this transaction: take it from the cache
			var err error
			if st, err = p.DB.Interface(name); err != nil {
				o.Err = fmt.Errorf("port %q: %w", spec.Port.Name, err)
				return o
			}
		}
		msg, bad := failed[name]
		if !bad && st.Error != "" {
			msg, bad = st.Error, true
		}
		if bad {
			errs = append(errs, ovsdb.InterfaceError{Interface: name, Message: msg})
		}
		o.Value.Interfaces = append(o.Value.Interfaces, st)
	}
	if len(errs) > 0 {
		o.Err = fmt.Errorf("port %q: %w", spec.Port.Name, &ovsdb.ApplyError{Interfaces: errs})
	}
	return o
}

func ifaceNames(spec ovsdb.PortOn) []string {
	if len(spec.Port.Interfaces) == 0 {
		return []string{spec.Port.Name}
	}
	names := make([]string, len(spec.Port.Interfaces))
	for i, ifc := range spec.Port.Interfaces {
		names[i] = ifc.Name
	}
	return names
}

// culprits returns the requests an *ovsdb.OpError in err names: by port or interface name, or
// by bridge for a Bridge row.
func culprits(err error, reqs []PortRequest) []int {
	var oe *ovsdb.OpError
	if !errors.As(err, &oe) || oe.Row == "" {
		return nil
	}
	var idx []int
	for i, r := range reqs {
		hit := false
		switch oe.Table {
		case "Bridge":
			hit = r.Spec.Bridge == oe.Row
		case "Port":
			hit = r.Spec.Port.Name == oe.Row
		case "Interface":
			hit = !r.Delete && containsName(ifaceNames(r.Spec), oe.Row) || r.Delete && r.Spec.Port.Name == oe.Row
		}
		if hit {
			idx = append(idx, i)
		}
	}
	return idx
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// Divisible reports whether err refused the transaction before anything was written and may be
// due to a single request, so the Batcher may split the batch to isolate it. Connection loss,
// timeouts, conflicts and ovs-vswitchd errors are not divisible.
func (p *PortCommitter) Divisible(err error) bool {
	for _, k := range []error{ovsdb.ErrInvalid, ovsdb.ErrNotOwned, ovsdb.ErrNotFound,
		ovsdb.ErrConstraintViolation, ovsdb.ErrReferentialIntegrity} {
		if errors.Is(err, k) {
			return !errors.Is(err, ovsdb.ErrTimeout) && !errors.Is(err, ovsdb.ErrNotConnected)
		}
	}
	return false
}

// PortKey is an Options.Key for PortRequests: the port's name, so two requests for one port
// never share a transaction (the OVSDB layer refuses a port given twice) and apply in order.
func PortKey(r PortRequest) string { return r.Spec.Port.Name }
