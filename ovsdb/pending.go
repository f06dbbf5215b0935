package ovsdb

import (
	"context"
	"time"
)

// Committed is a transaction OVSDB has committed whose application by ovs-vswitchd has not
// been awaited yet: the first half of a Commit, returned by Txn.CommitPending. A writer that
// pipelines its transactions commits the next one while ovs-vswitchd applies this one, and
// waits for each with Wait. It is safe for concurrent use by one waiter at a time.
type Committed struct {
	c     *Client
	opts  CommitOptions
	res   Result
	p     *planner
	start time.Time
}

// CommitPending is the first half of Commit: it plans and commits the transaction (retrying
// after concurrent changes as Commit does) and returns as soon as OVSDB has committed it and
// the client's cache shows its rows, without waiting for ovs-vswitchd. Its errors are Commit's
// errors before the wait: on error nothing was committed, except for a *DisconnectedError
// whose Unknown says otherwise. Call Wait on the result for the acknowledgement (its
// next_cfg, which a later transaction only raises, is in Result().NextCfg).
func (t *Txn) CommitPending(ctx context.Context, opts CommitOptions) (*Committed, error) {
	res, p, start, err := t.send(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Committed{c: t.c, opts: opts, res: *res, p: p, start: start}, nil
}

// Result returns what the commit wrote: Attempts, Ops, NextCfg and Committed (no interface
// states yet: Wait returns them).
func (c *Committed) Result() Result { return c.res }

// Wait is the second half of Commit: it waits, bounded by ctx and opts.ApplyTimeout, until
// ovs-vswitchd has applied the transaction (cur_cfg reaching its next_cfg; at once with
// opts.NoWait) and returns the committed Result with the states of the interfaces it created or
// changed and Applied, the time since the commit. Its errors are Commit's after the commit:
// an *ApplyError with the Result still returned, or ErrTimeout / context.Canceled (the
// transaction stays committed).
func (c *Committed) Wait(ctx context.Context) (*Result, error) {
	res := c.res
	return c.c.finishCommit(ctx, c.opts, &res, c.p, c.start)
}
