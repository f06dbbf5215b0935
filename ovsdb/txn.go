package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Txn collects changes that are committed together, atomically, in one OVSDB transaction. Build
// it with the Ensure*/Delete*/…Global* methods (each returns the Txn for chaining) and send it with
// Commit. Every change is idempotent: ensuring what already exists changes nothing, deleting
// what is absent is a no-op. A Txn holds intents, not operations: Commit plans the operations
// from the cache on each attempt, so a retry after a concurrent change starts from fresh state.
// A Txn is not safe for concurrent use.
type Txn struct {
	c       *Client
	gen     int64
	intents []func(*planner) error
	err     error
}

// NewTxn starts a transaction whose created or changed rows are tagged with generation gen.
func (c *Client) NewTxn(gen int64) *Txn {
	return &Txn{c: c, gen: gen}
}

func (t *Txn) push(validate func() error, f func(*planner) error) *Txn {
	if t.err != nil {
		return t
	}
	if validate != nil {
		if err := validate(); err != nil {
			t.err = err
			return t
		}
	}
	t.intents = append(t.intents, f)
	return t
}

// EnsureBridge makes bridge b exist as it says (the columns of model.Bridge but its Ports) and,
// with local non-nil, its own internal interface as local says, for example its mtu_request on
// a DPDK br-phy; local's Name and Type are ignored (they are always b.Name and "internal"), and
// nil means OVS defaults. A new bridge gets its local port (named like the bridge), as
// ovs-vsctl add-br does. An existing bridge must be owned. b.Ports must be empty (ErrInvalid
// otherwise): each port is an intent of its own (EnsurePort), and ports the bridge holds but
// the intent does not name are left alone. b.Controllers are Controller rows owned like every
// row ovsplane creates; controllers others added are kept, and an empty list removes the owned
// ones.
func (t *Txn) EnsureBridge(b model.Bridge, local *model.Interface) *Txn {
	return t.push(func() error { return validateBridge(&b, local) }, func(p *planner) error { return p.ensureBridge(b, local) })
}

// DeleteBridge removes an owned bridge with its ports and interfaces. It fails with ErrNotOwned
// when the bridge, or any port on it, was created by someone else.
func (t *Txn) DeleteBridge(name string) *Txn {
	return t.push(func() error { return validName("bridge", name) }, func(p *planner) error { return p.deleteBridge(name) })
}

// EnsurePort makes port on.Port and exactly its listed interfaces exist on bridge on.Bridge
// (moving it there from another bridge if need be), all columns written in the same
// transaction that creates the rows (never create-then-set). Bridge.ports is changed with a
// mutate insert, never rewritten. The bridge must exist (or be ensured earlier in the same
// transaction).
func (t *Txn) EnsurePort(on PortOn) *Txn {
	return t.push(on.validate, func(p *planner) error { return p.ensurePort(on) })
}

// DeletePort removes an owned port and its interfaces. bridge may be "" to mean whichever bridge
// holds it; a non-empty bridge must match.
func (t *Txn) DeletePort(bridge, name string) *Txn {
	return t.push(func() error { return validName("port", name) }, func(p *planner) error { return p.deletePort(bridge, name) })
}

// SetGlobal sets keys of Open_vSwitch.other_config (dpdk-init, dpdk-socket-mem, pmd-cpu-mask…)
// and records them as owned. A key already set by someone else is refused with ErrNotOwned and
// left as it is. Several SetGlobal/UnsetGlobal calls in one Txn merge, the last word per key
// winning.
func (t *Txn) SetGlobal(kv map[string]string) *Txn {
	return t.push(func() error {
		for k := range kv {
			if err := validGlobalKey(k); err != nil {
				return err
			}
		}
		return nil
	}, func(p *planner) error { return p.setGlobal(kv) })
}

// UnsetGlobal removes owned keys from Open_vSwitch.other_config. Absent keys are ignored; keys
// present but set by someone else fail with ErrNotOwned.
func (t *Txn) UnsetGlobal(keys ...string) *Txn {
	return t.push(nil, func(p *planner) error { return p.unsetGlobal(keys) })
}

// CommitOptions tune Commit.
type CommitOptions struct {
	// NoWait skips the ovs-vswitchd acknowledgement: next_cfg is not incremented and Commit
	// returns as soon as the database has committed (like ovs-vsctl --no-wait).
	NoWait bool
	// MaxAttempts bounds the retries after a concurrent writer changed rows this transaction
	// depended on. Default 8.
	MaxAttempts int
	// ApplyTimeout bounds the wait for ovs-vswitchd, on top of ctx. 0 means
	// DefaultApplyTimeout; negative means no bound but ctx (ovs-vsctl's default behaviour).
	ApplyTimeout time.Duration
	// ReconnectWait bounds how long Commit waits for a lost connection to come back, counted
	// from when the client lost it: once the connection has been down that long, Commit fails
	// with a *DisconnectedError (errors.Is ErrNotConnected) — at once for a Commit that starts
	// later in the outage — instead of waiting as long as ctx allows. The error says whether
	// the transaction may have been committed (an attempt was in flight when the connection
	// dropped) or certainly was not. A transaction that committed before the connection
	// dropped is not affected: its wait for ovs-vswitchd is bounded by ApplyTimeout. 0 (or
	// negative): no bound but ctx.
	ReconnectWait time.Duration
}

// DefaultApplyTimeout is how long Commit waits for ovs-vswitchd unless told otherwise: long enough
// for a reconfiguration of thousands of ports, short enough that an absent ovs-vswitchd is
// reported instead of hanging the caller.
const DefaultApplyTimeout = 2 * time.Minute

// Result reports a committed transaction.
type Result struct {
	Attempts   int              // 1 unless concurrent writers forced retries
	Ops        int              // operations in the committed transaction
	NextCfg    int              // next_cfg written (0 with NoWait)
	Interfaces []InterfaceState // interfaces created or changed, as ovs-vswitchd left them
	// Committed is how long the call took until OVSDB had committed (planning, retries and
	// the transaction itself); Applied the wait for ovs-vswitchd after that (0 with NoWait).
	Committed, Applied time.Duration
}

// Commit sends the transaction and, unless opts.NoWait, waits for ovs-vswitchd to apply it
// (Open_vSwitch.cur_cfg reaching the next_cfg this transaction wrote). It returns the state of
// every interface it created or changed. When ovs-vswitchd reported errors for some interfaces
// the error is an *ApplyError (errors.Is ErrVswitchd) and the Result is still returned; the
// transaction is not undone. Spec errors, ownership refusals and OVSDB errors return before or
// instead of committing, with nothing changed. ctx bounds the whole call; when it ends while
// waiting for ovs-vswitchd the error matches ErrTimeout (deadline, or opts.ApplyTimeout) or
// context.Canceled; the transaction itself has then committed and Result says what it wrote.
func (t *Txn) Commit(ctx context.Context, opts CommitOptions) (*Result, error) {
	c, err := t.CommitPending(ctx, opts)
	if err != nil {
		return nil, err
	}
	return c.Wait(ctx)
}

// send plans and commits the transaction, retrying after concurrent changes, and returns the
// committed result (without interface states), its planner and when the call started.
func (t *Txn) send(ctx context.Context, opts CommitOptions) (*Result, *planner, time.Time, error) {
	if t.err != nil {
		return nil, nil, time.Time{}, t.err
	}
	maxAttempts := opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 8
	}
	var lastErr error
	serverClashes := 0
	inFlight := false // an attempt was sent and its connection lost: it may have committed
	start := time.Now()
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		changed := t.c.changes()
		res, p, sent, err := t.attempt(ctx, opts)
		if sent && errors.Is(err, ErrNotConnected) {
			inFlight = true
		}
		var gaveUp *DisconnectedError
		if errors.As(err, &gaveUp) { // opts.ReconnectWait ran out
			gaveUp.Unknown = gaveUp.Unknown || inFlight
			return nil, nil, start, fmt.Errorf("ovsdb: commit: %w", err)
		}
		if err == nil {
			res.Attempts = attempt
			res.Committed = time.Since(start)
			return res, p, start, nil
		}
		switch {
		case ctx.Err() != nil:
			return nil, nil, start, ctxErr(ctx, err)
		case !sent && !errors.Is(err, ErrNotConnected):
			return nil, nil, start, err // the planner refused: spec, ownership, missing bridge — retrying cannot help
		case errors.Is(err, ErrConstraintViolation):
			// A name the cache did not show was taken on the server: one more try from a cache
			// that has caught up turns it into a precise error (or succeeds).
			if serverClashes++; serverClashes > 1 {
				return nil, nil, start, err
			}
		case !retryable(err):
			return nil, nil, start, err
		}
		lastErr = err
		// Wait for the cache to receive the change that made the attempt fail, and at least a
		// short, growing pause so a busy switch does not burn all attempts in a millisecond.
		pause := time.Duration(attempt) * 10 * time.Millisecond
		select {
		case <-changed:
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return nil, nil, start, ctxErr(ctx, err)
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return nil, nil, start, ctxErr(ctx, err)
		}
	}
	return nil, nil, start, fmt.Errorf("%w: gave up after %d attempts: %w", ErrConflict, maxAttempts, lastErr)
}

// ctxErr reports the end of ctx during a commit; a deadline matches ErrTimeout.
func ctxErr(ctx context.Context, last error) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return fmt.Errorf("ovsdb: commit: %w (last error: %w)", err, last)
}

func retryable(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrNotConnected) || errors.Is(err, ErrConstraintViolation)
}

// attempt plans and sends the transaction once. sent tells whether it reached the server.
func (t *Txn) attempt(ctx context.Context, opts CommitOptions) (res *Result, p *planner, sent bool, err error) {
	if err := t.c.AwaitConnected(ctx, opts.ReconnectWait); err != nil {
		return nil, nil, false, err
	}
	p = newPlanner(ctx, t.c, t.gen)
	for _, f := range t.intents {
		if err := f(p); err != nil {
			return nil, nil, false, err
		}
	}
	if err := p.finish(); err != nil {
		return nil, nil, false, err
	}
	res = &Result{}
	if len(p.ops) == 0 {
		// Nothing to change: no transaction, and no needless ovs-vswitchd reconfiguration. A
		// waiting caller still learns that everything written so far has been applied.
		if !opts.NoWait {
			root, err := p.rootRow()
			if err != nil {
				return nil, nil, false, err
			}
			res.NextCfg = root.NextCfg
		}
		return res, p, false, nil
	}
	selectIdx := -1
	if !opts.NoWait {
		root, err := p.rootRow()
		if err != nil {
			return nil, nil, false, err
		}
		ref := objRef{table: vswitch.OpenvSwitchTable, name: "."}
		p.guard(ref, root.UUID, false, existsRow(root.UUID))
		p.add(ref, mutateOp(ref.table, whereUUID(root.UUID), []libovsdb.Mutation{
			{Column: "next_cfg", Mutator: libovsdb.MutateOperationAdd, Value: 1}}))
		selectIdx = len(p.ops)
		p.add(ref, libovsdb.Operation{Op: libovsdb.OperationSelect, Table: ref.table,
			Where: whereUUID(root.UUID), Columns: []string{"next_cfg"}})
	}
	if t.c.beforeTransact != nil {
		t.c.beforeTransact()
	}
	sentAt := time.Now()
	tctx, stop := t.c.boundByLink(ctx, opts.ReconnectWait)
	results, err := t.c.lc.Transact(tctx, p.ops...)
	stop()
	if gaveUp := linkGaveUp(tctx, err); gaveUp != nil && ctx.Err() == nil {
		return nil, nil, gaveUp.Unknown, gaveUp
	}
	if t.c.obs != nil {
		oerr := err
		if oerr == nil {
			oerr = translateResults(results, p.ops, p.refs)
		}
		t.c.obs.Transacted(time.Since(sentAt), len(p.ops), oerr)
	}
	if err != nil {
		if !t.c.Connected() && !errors.Is(err, client.ErrNotConnected) {
			err = fmt.Errorf("%w: %w", ErrNotConnected, err)
		}
		return nil, nil, true, fmt.Errorf("ovsdb: transaction of %d operations on %s: %w", len(p.ops), t.c.Endpoint(), translateTransportErr(err))
	}
	if err := translateResults(results, p.ops, p.refs); err != nil {
		return nil, nil, true, err
	}
	res.Ops = len(p.ops)
	t.c.awaitCache(ctx, p, results)
	if selectIdx >= 0 {
		n, err := intFromRow(results[selectIdx].Rows, "next_cfg")
		if err != nil {
			return nil, nil, true, err
		}
		res.NextCfg = n
	}
	return res, p, true, nil
}

// finishCommit waits for ovs-vswitchd (unless opts.NoWait) after a commit that started at
// start and fills res's interface states and Applied.
func (c *Client) finishCommit(ctx context.Context, opts CommitOptions, res *Result, p *planner, start time.Time) (*Result, error) {
	if opts.NoWait {
		res.Interfaces = c.interfaceStates(p.ifaces)
		return res, nil
	}
	wait := opts.ApplyTimeout
	if wait == 0 {
		wait = DefaultApplyTimeout
	}
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	states, err := c.WaitApplied(ctx, res.NextCfg, p.ifaces...)
	res.Interfaces = states
	res.Applied = max(0, time.Since(start)-res.Committed)
	return res, err
}

func intFromRow(rows []libovsdb.Row, col string) (int, error) {
	if len(rows) != 1 {
		return 0, fmt.Errorf("ovsdb: select of %s returned %d rows, want 1", col, len(rows))
	}
	switch v := rows[0][col].(type) {
	case float64:
		return int(v), nil
	case int:
		return v, nil
	case int64:
		return int(v), nil
	}
	return 0, fmt.Errorf("ovsdb: select of %s returned %T", col, rows[0][col])
}

// awaitCacheLimit bounds awaitCache: rows can legitimately never show up (an inserted Port or
// Interface nothing refers to is garbage-collected at commit; another writer may delete a new row
// before our cache sees it).
const awaitCacheLimit = 2 * time.Second

// awaitCache waits, for at most awaitCacheLimit, until the cache shows the rows this transaction
// inserted and no longer shows those it deleted, so that the caller's next transaction plans
// from a cache that includes this one (the server's update notification and its transaction
// reply travel separately). The transaction has committed either way; if the cache lags, the
// next transaction's guards catch it.
func (c *Client) awaitCache(ctx context.Context, p *planner, results []libovsdb.OperationResult) {
	ctx, cancel := context.WithTimeout(ctx, awaitCacheLimit)
	defer cancel()
	type row struct{ table, uuid string }
	var present, gone []row
	for i, op := range p.ops {
		switch op.Op {
		case libovsdb.OperationInsert:
			present = append(present, row{op.Table, results[i].UUID.GoUUID})
		case libovsdb.OperationDelete:
			if u, ok := op.Where[0].Value.(libovsdb.UUID); ok {
				gone = append(gone, row{op.Table, u.GoUUID})
			}
		}
	}
	for {
		ch := c.changes()
		rr, synced := c.read()
		for _, r := range present {
			if !synced || !rr.has(r.table, r.uuid) {
				synced = false
				break
			}
		}
		for _, r := range gone {
			if !synced || rr.has(r.table, r.uuid) {
				synced = false
				break
			}
		}
		if synced {
			return
		}
		select {
		case <-ch:
		case <-time.After(100 * time.Millisecond):
			// Reconnection replaces the cache without necessarily firing per-row events.
		case <-ctx.Done():
			c.log.Debug("cache did not show every row of a committed transaction in time", "rows", len(present)+len(gone))
			return
		}
	}
}
