package fabric

import (
	"context"
	"fmt"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// Lease bounds.
const (
	// MinLeaseTTL and MaxLeaseTTL bound AcquireLease's ttl.
	MinLeaseTTL = 100 * time.Millisecond
	MaxLeaseTTL = 10 * time.Minute
)

// Lease is the controller lease as seen by one caller.
type Lease struct {
	// Holder is the controller holding the lease ("" when none ever did or it was released).
	Holder string
	// Expires is when the holder's lease ends unless renewed.
	Expires time.Time
	// Epoch counts changes of holder; PublishRoutes fenced by a Lease checks it.
	Epoch int64
	// Held is true when the lease belongs to the caller that asked (AcquireLease) and has not
	// expired by the caller's clock.
	Held bool
}

// leaseOf describes g's lease for caller me ("" for no caller).
func (c *Client) leaseOf(g global, me string) Lease {
	exp := time.UnixMilli(g.expiresMs)
	return Lease{Holder: g.holder, Expires: exp, Epoch: g.epoch,
		Held: me != "" && g.holder == me && exp.After(c.now())}
}

// AcquireLease takes the controller lease for holder for ttl when it is free, expired or
// already holder's (a renewal), with a compare-and-swap on holder, expiry and epoch, so of
// controllers racing for a free lease exactly one gets it. The epoch grows when the holder
// changes. It returns the lease as it now stands: Held false means another controller holds
// it until Lease.Expires.
func (c *Client) AcquireLease(ctx context.Context, holder string, ttl time.Duration) (Lease, error) {
	if err := checkName("lease holder", holder); err != nil {
		return Lease{}, err
	}
	if ttl < MinLeaseTTL || ttl > MaxLeaseTTL {
		return Lease{}, fmt.Errorf("%w: lease for %s: ttl %v: give %v to %v", ErrInvalid, holder, ttl, MinLeaseTTL, MaxLeaseTTL)
	}
	var out Lease
	err := c.retry(ctx, "acquire lease for "+holder, func(ctx context.Context, _ bool) (bool, error) {
		g, err := c.readGlobal(ctx)
		if err != nil {
			return false, err
		}
		now := c.now()
		if g.holder != "" && g.holder != holder && g.expiresMs > msOf(now) {
			out = c.leaseOf(g, holder)
			return true, nil
		}
		next := g
		next.holder, next.expiresMs = holder, msOf(now.Add(ttl))
		if g.holder != holder {
			next.epoch = g.epoch + 1
		}
		if err := c.casLease(ctx, g, next); err != nil {
			return false, err
		}
		out = c.leaseOf(next, holder)
		return true, nil
	})
	return out, err
}

// ReleaseLease gives up holder's lease so another controller may take it at once. Releasing a
// lease holder does not hold does nothing.
func (c *Client) ReleaseLease(ctx context.Context, holder string) error {
	if err := checkName("lease holder", holder); err != nil {
		return err
	}
	return c.retry(ctx, "release lease of "+holder, func(ctx context.Context, _ bool) (bool, error) {
		g, err := c.readGlobal(ctx)
		if err != nil {
			return false, err
		}
		if g.holder != holder {
			return true, nil
		}
		next := g
		next.holder, next.expiresMs = "", 0
		return true, c.casLease(ctx, g, next)
	})
}

// casLease writes next's lease columns if the row still holds g's.
func (c *Client) casLease(ctx context.Context, g, next global) error {
	cols := []string{"lease_holder", "lease_expires_ms", "lease_epoch"}
	_, err := c.transact(ctx,
		waitEqual(tableGlobal, allGlobal(), cols, []ovsdb.Row{{"lease_holder": g.holder, "lease_expires_ms": g.expiresMs, "lease_epoch": g.epoch}}),
		ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: tableGlobal, Where: allGlobal(),
			Row: ovsdb.Row{"lease_holder": next.holder, "lease_expires_ms": next.expiresMs, "lease_epoch": next.epoch}})
	return err
}
