package vswitchd

import (
	"context"
	"errors"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// portCommitter commits the batches of ApplyPort/DeletePort: under the Daemon's writer lock,
// one ovsdb transaction per batch (batch.PortCommitter), then it records in the Daemon's API
// objects what OVSDB now holds for each request — also after a whole-batch error, since a
// commit whose acknowledgement was lost may have happened.
type portCommitter struct{ d *Daemon }

// Commit implements batch.Committer.
func (pc *portCommitter) Commit(ctx context.Context, reqs []batch.PortRequest) ([]batch.Outcome[batch.PortResult], error) {
	d := pc.d
	d.writer.Lock()
	defer d.writer.Unlock()
	start := time.Now()
	var committed, applied time.Duration
	inner := batch.PortCommitter{DB: d.c, Generation: d.rec.Generation(), Options: d.opts.Commit,
		OnResult: func(r *ovsdb.Result) { committed, applied = r.Committed, r.Applied }}
	outs, err := inner.Commit(ctx, reqs)
	if committed == 0 { // refused or failed before OVSDB committed
		committed = time.Since(start)
	}
	if d.opts.Observer != nil {
		d.opts.Observer.BatchCommitted(len(reqs), committed, applied, err)
	}
	d.log.Debug("batch committed", "size", len(reqs), "committed", committed, "applied", applied, "error", err)
	var item *batch.ItemError
	if err != nil && (errors.As(err, &item) || inner.Divisible(err)) {
		return nil, err // refused before anything was written
	}
	d.settle(reqs)
	// No status refresh here: each caller gets its result from the batch itself, and the
	// reconciler refreshes the statuses from the cache (debounced) as the changes arrive.
	return outs, err
}

// Divisible implements the batcher's isolation test (see batch.PortCommitter.Divisible).
func (pc *portCommitter) Divisible(err error) bool {
	return (&batch.PortCommitter{}).Divisible(err)
}

// settle records, for each request, what OVSDB holds now: an ensured port that exists with the
// API's tags becomes (or stays) an API object, a deleted port that is gone stops being one.
func (d *Daemon) settle(reqs []batch.PortRequest) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range reqs {
		tags, present := d.c.Tags("Port", r.Spec.Port.Name)
		switch {
		case r.Delete && !present:
			delete(d.ports, r.Spec.Port.Name)
			d.objVer++
		case !r.Delete && present && tags[OriginKey] == string(OriginAPI) && tags[SpecKey] == r.Spec.Port.ExternalIDs[SpecKey]:
			// The spec key round-trips the API's view of the port exactly.
			var sp storedPort
			if err := unmarshalSpec(tags[SpecKey], &sp); err == nil {
				d.ports[r.Spec.Port.Name] = newAPIPort(sp)
				d.objVer++
			}
		}
	}
}
