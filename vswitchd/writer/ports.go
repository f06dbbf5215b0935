package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// PortRequest asks for one port to exist as Spec says, or, with Delete, to be absent (only
// Spec.Bridge, which may be "", and Spec.Name are used then). Options.Settle receives them.
//
// A plugin object owning several rows is one request: Spec is its first port, More its other
// ports and Bridges the bridges it creates, all in the same transaction — ensured bridges
// first, then ports; deleted ports first, then bridges (only the names are used then). The
// request succeeds or fails as a whole.
//
// An ensure may also drop rows an object no longer has (its shape changed): Drop's ports, then
// DropBridges, are deleted before anything is ensured, in the same transaction.
type PortRequest struct {
	Delete      bool
	Spec        ovsdb.PortOn
	More        []ovsdb.PortOn
	Bridges     []model.Bridge
	Drop        []ovsdb.PortOn
	DropBridges []string
}

// ports returns the request's ports, Spec first.
func (r PortRequest) ports() []ovsdb.PortOn {
	if len(r.More) == 0 {
		return []ovsdb.PortOn{r.Spec}
	}
	return append([]ovsdb.PortOn{r.Spec}, r.More...)
}

// PortResult is what ovs-vswitchd reports for the interfaces of an ensured port, in the order
// of the spec. Each interface has its ofport.
type PortResult struct {
	Interfaces []ovsdb.InterfaceState
}

// Announcement is a port request announced before it is ready (see batch.Batcher.Announce).
type Announcement = batch.Announcement[PortRequest, PortResult]

// Announce tells the port batcher that a request is coming (its caller first does other work,
// a plugin's Validate and Attach), so the batch it belongs to waits for it (bounded; see
// batch.Options.AnnouncedDelay). Pass it to EnsurePort or EnsureObject, or Cancel it as soon
// as the request will not come; it is withdrawn by itself when ctx ends.
func (w *Writer) Announce(ctx context.Context) *Announcement { return w.batcher.Announce(ctx) }

// EnsurePort makes port p of bridge exist as p says (converted by PortSpec), in a batch with
// concurrent requests, and returns its interfaces as ovs-vswitchd acknowledged them. An
// interface ovs-vswitchd refused fails the call with an error matching ovsdb.ErrVswitchd
// while the result still lists the interfaces (the port is written). ann, if not nil, is
// the announcement made for this request. Errors are the batcher's (batch.ErrClosed,
// batch.ErrOutcomeUnknown with ctx's error) or OVSDB's.
func (w *Writer) EnsurePort(ctx context.Context, ann *Announcement, bridge string, p model.Port) (PortResult, error) {
	req := PortRequest{Spec: PortSpec(bridge, p)}
	if ann != nil {
		return w.batcher.SubmitAnnounced(ctx, ann, req)
	}
	return w.batcher.Submit(ctx, req)
}

// Object is a plugin object to ensure (see EnsureObject): its first port First on Bridge, its
// other ports More and the bridges it creates, Bridges; Drop and DropBridges are rows a previous
// shape of it had that this one has not.
type Object struct {
	Bridge      string
	First       model.Port
	More        []ovsdb.PortOn
	Bridges     []model.Bridge
	Drop        []ovsdb.PortOn
	DropBridges []string
}

// EnsureObject is EnsurePort for a plugin object, written in one request (see PortRequest):
// everything it has and the removal of what it no longer has. The result lists the interfaces
// of all its ports, First's first.
func (w *Writer) EnsureObject(ctx context.Context, ann *Announcement, o Object) (PortResult, error) {
	req := PortRequest{Spec: PortSpec(o.Bridge, o.First), More: o.More, Drop: o.Drop, DropBridges: o.DropBridges}
	for _, b := range o.Bridges {
		req.Bridges = append(req.Bridges, BridgeSpec(b))
	}
	if ann != nil {
		return w.batcher.SubmitAnnounced(ctx, ann, req)
	}
	return w.batcher.Submit(ctx, req)
}

// DeletePort deletes port name of bridge ("" for any bridge) in a batch with concurrent
// requests.
func (w *Writer) DeletePort(ctx context.Context, bridge, name string) error {
	return w.DeleteObject(ctx, bridge, name, nil, nil)
}

// DeleteObject deletes a plugin object in one request: its first port name of bridge, its
// other ports more (each of its bridge) and the bridges it created (by name).
func (w *Writer) DeleteObject(ctx context.Context, bridge, name string, more []ovsdb.PortOn, bridges []string) error {
	req := PortRequest{Delete: true, Spec: ovsdb.PortOn{Bridge: bridge, Port: model.Port{Name: name}}}
	for _, mp := range more {
		req.More = append(req.More, ovsdb.PortOn{Bridge: mp.Bridge, Port: model.Port{Name: mp.Port.Name}})
	}
	for _, b := range bridges {
		req.Bridges = append(req.Bridges, model.Bridge{Name: b})
	}
	_, err := w.batcher.Submit(ctx, req)
	return err
}

// portDoor commits the batches of port requests, each as ONE ovsdb.Txn holding the Writer's
// turn, so ovs-vswitchd reconfigures once and acknowledges once (next_cfg/cur_cfg) per batch,
// and maps the outcome back to each request:
//   - the port's interfaces and their ofports, or an *ovsdb.ApplyError (errors.Is
//     ovsdb.ErrVswitchd) naming those of its interfaces ovs-vswitchd refused; only that
//     request fails, the transaction stays committed for its neighbours;
//   - an *ovsdb.OpError refusing the whole transaction before anything was written (spec
//     error, ownership refusal, missing bridge, constraint violation) is returned as a
//     *batch.ItemError naming the requests whose port, interface or bridge it names, so the
//     Batcher fails those and commits the rest again; when it names none, Divisible lets the
//     Batcher bisect;
//   - any other error (lost connection, ovs-vswitchd not acknowledging in time) fails the
//     whole batch: the outcome is unknown or transient, and retrying is the reconciler's
//     decision.
//
// After a commit that may have written something it calls settle, still holding the turn; it
// then releases the turn and waits for ovs-vswitchd without it.
type portDoor struct {
	db   DB
	gen  func() int64
	opts ovsdb.CommitOptions // NoWait must stay false to get ofports
	// turn and release, if set, serialise the commits with the Writer's other doors.
	turn    func(ctx context.Context, wait bool) (bool, error)
	release func()
	log     *slog.Logger
	onBatch func(size int, committed, applied time.Duration, err error)
	settle  func([]PortRequest)
	pipe    *pipeline // the batches waiting for ovs-vswitchd, and their apply times
}

var _ batch.Committer[PortRequest, PortResult] = (*portDoor)(nil)

// Commit implements batch.Committer. It commits the batch holding the Writer's turn, calls
// settle (still holding it), releases the turn and only then waits for ovs-vswitchd's
// acknowledgement, so the next batch is committed while this one is applied (the Batcher's
// MaxInFlight and InFlightLimit bound how many wait together).
func (p *portDoor) Commit(ctx context.Context, reqs []PortRequest) ([]batch.Outcome[PortResult], error) {
	pend, committed, err := p.commit(ctx, reqs)
	if err != nil {
		p.report(len(reqs), committed, 0, err)
		return nil, err
	}
	committedAt := time.Now()
	if p.pipe != nil {
		p.pipe.begin()
	}
	res, werr := pend.Wait(ctx)
	if p.pipe != nil {
		p.pipe.end(len(reqs), committedAt, time.Now(), res != nil && (werr == nil || errors.As(werr, new(*ovsdb.ApplyError))))
	}
	var applied time.Duration
	if res != nil {
		applied = res.Applied
	}
	p.report(len(reqs), committed, applied, werr)
	return p.outcomes(reqs, res, werr)
}

// commit is the first half of Commit: holding the turn, it commits reqs as one transaction and
// calls settle when something may have been written. It returns the pending acknowledgement
// and how long the commit took; an error means the whole batch failed before the wait.
func (p *portDoor) commit(ctx context.Context, reqs []PortRequest) (*ovsdb.Committed, time.Duration, error) {
	if p.turn != nil {
		if _, err := p.turn(ctx, true); err != nil {
			return nil, 0, err // nothing written
		}
		defer p.release()
	}
	start := time.Now()
	pend, err := p.txn(reqs).CommitPending(ctx, p.opts)
	committed := time.Since(start)
	if err != nil {
		if idx := culprits(err, reqs); len(idx) > 0 {
			return nil, committed, &batch.ItemError{Indexes: idx, Err: err} // refused before anything was written
		}
		if p.Divisible(err) {
			return nil, committed, err // refused before anything was written
		}
	} else {
		committed = pend.Result().Committed
	}
	if p.settle != nil {
		// Also after a whole-batch error: a commit whose reply was lost may have happened.
		// No status refresh here: each caller gets its result from the batch, and the
		// reconciler refreshes the statuses from the cache as the changes arrive.
		p.settle(reqs)
	}
	return pend, committed, err
}

// report passes a batch's measurements to OnBatch and the debug log.
func (p *portDoor) report(size int, committed, applied time.Duration, err error) {
	if p.onBatch != nil {
		p.onBatch(size, committed, applied, err)
	}
	if p.log != nil {
		p.log.Debug("batch committed", "size", size, "committed", committed, "applied", applied, "error", err)
	}
}

// txn builds the transaction of reqs.
func (p *portDoor) txn(reqs []PortRequest) *ovsdb.Txn {
	txn := p.db.NewTxn(p.gen())
	for _, r := range reqs {
		if r.Delete {
			for _, on := range r.ports() {
				txn.DeletePort(on.Bridge, on.Port.Name)
			}
			for _, b := range r.Bridges {
				txn.DeleteBridge(b.Name)
			}
			continue
		}
		for _, on := range r.Drop {
			txn.DeletePort(on.Bridge, on.Port.Name)
		}
		for _, b := range r.DropBridges {
			txn.DeleteBridge(b)
		}
		for _, b := range r.Bridges {
			txn.EnsureBridge(b, nil)
		}
		for _, on := range r.ports() {
			txn.EnsurePort(on)
		}
	}
	return txn
}

// outcomes maps the acknowledged result of a batch to each request: an *ovsdb.ApplyError fails
// only the requests whose interfaces it names; any other error fails the whole batch.
func (p *portDoor) outcomes(reqs []PortRequest, res *ovsdb.Result, err error) ([]batch.Outcome[PortResult], error) {
	var applyErr *ovsdb.ApplyError
	if err != nil && !(errors.As(err, &applyErr) && res != nil) {
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
	out := make([]batch.Outcome[PortResult], len(reqs))
	for i, r := range reqs {
		if r.Delete {
			continue
		}
		out[i] = p.portOutcome(r, states, failed)
	}
	return out, nil
}

func (p *portDoor) portOutcome(r PortRequest, states map[string]ovsdb.InterfaceState,
	failed map[string]string) batch.Outcome[PortResult] {
	var o batch.Outcome[PortResult]
	var errs []ovsdb.InterfaceError
	spec := r.Spec
	for _, name := range reqIfaceNames(r) {
		st, ok := states[name]
		if !ok { // unchanged by this transaction: take it from the cache
			var err error
			if st, err = p.db.Interface(name); err != nil {
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

// reqIfaceNames returns the interfaces of all the request's ports, Spec's first.
func reqIfaceNames(r PortRequest) []string {
	if len(r.More) == 0 {
		return ifaceNames(r.Spec)
	}
	var out []string
	for _, on := range r.ports() {
		out = append(out, ifaceNames(on)...)
	}
	return out
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
		for _, on := range r.ports() {
			switch oe.Table {
			case "Bridge":
				hit = hit || on.Bridge == oe.Row
			case "Port":
				hit = hit || on.Port.Name == oe.Row
			case "Interface":
				hit = hit || !r.Delete && containsName(ifaceNames(on), oe.Row) || r.Delete && on.Port.Name == oe.Row
			}
		}
		for _, b := range r.Bridges {
			hit = hit || (oe.Table == "Bridge" || oe.Table == "Port" || oe.Table == "Interface") && b.Name == oe.Row
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

// Divisible reports whether err refused the transaction before anything was written and may
// be due to a single request, so the Batcher may split the batch to isolate it. Connection
// loss, timeouts, conflicts and ovs-vswitchd errors are not divisible.
func (p *portDoor) Divisible(err error) bool {
	for _, k := range []error{ovsdb.ErrInvalid, ovsdb.ErrNotOwned, ovsdb.ErrNotFound,
		ovsdb.ErrConstraintViolation, ovsdb.ErrReferentialIntegrity} {
		if errors.Is(err, k) {
			return !errors.Is(err, ovsdb.ErrTimeout) && !errors.Is(err, ovsdb.ErrNotConnected)
		}
	}
	return false
}

// portKey is the batcher's Options.Key: the port's name, so two requests for one port never
// share a transaction (the OVSDB layer refuses a port given twice) and apply in order.
func portKey(r PortRequest) string { return r.Spec.Port.Name }
