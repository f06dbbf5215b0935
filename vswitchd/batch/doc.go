// Package batch coalesces concurrent change requests into batches ("group commit") and gives
// every caller its own result. It is the batcher of ovsplaned: many callers each ask for one port,
// and ovs-vswitchd, which reconfigures a whole bridge per committed transaction, sees one
// transaction and one next_cfg/cur_cfg acknowledgement per batch instead of one per port.
//
// # Flushing
//
// A Batcher holds a FIFO queue and at most Options.MaxInFlight batches being committed (default 1).
// Whenever a slot is free and requests are waiting, it sends a batch of at most Options.MaxSize
// requests when one of these holds:
//   - MaxSize requests are waiting (full batch);
//   - nothing is in flight and Options.Linger is false (idle: send at once, no added latency);
//   - the oldest waiting request has waited Options.MaxDelay.
//
// Options.SizeLimit, when set, lowers MaxSize batch by batch (vswitchd/writer bounds it by the
// measured time ovs-vswitchd takes to apply a batch). With MaxInFlight above 1 a Committer
// may overlap the slow end of one commit (vswitchd/writer: the wait for ovs-vswitchd) with
// the next batch.
//
// With the default MaxInFlight of 1 this is adaptive: a lone request goes at once, and while a
// batch is being committed and acknowledged the requests arriving meanwhile pile up and form the
// next batch, so the batch size follows the load and the commit rate never exceeds what
// ovs-vswitchd acknowledges. Linger trades latency for throughput by always waiting up to MaxDelay
// for a batch to fill. Requests with the same non-empty Options.Key never share a batch (nor are
// in flight together); a later one waits for a following batch, so per-key order is kept.
//
// # Announced requests
//
// A caller that must do work before its request is ready (ovsplaned: a plugin port's Validate
// and Attach round trips) announces it first (Announce) and submits it with SubmitAnnounced.
// With Options.Cohort, a batch that would go (cohort reached, or MaxDelay passed) but would
// leave out an announced request still being prepared waits for it: until every pending
// announcement is submitted or withdrawn, bounded twice by Options.AnnouncedDelay — an
// announcement holds batches only for AnnouncedDelay after it was made, and a batch waits no
// longer than AnnouncedDelay from its oldest request. A withdrawn announcement (Cancel, or the
// end of the context given to Announce) holds nothing from then on; a full batch, a closing
// Batcher and a batcher without Cohort ignore announcements. Without this, requests arriving a
// few milliseconds after their cohort's batch left form the start of the next one, the cohort
// size shrinks to the part that came first, and every following batch is split the same way.
//
// Options.Weight and MaxWeight bound the objects of one batch as well (default
// limits.MaxObjectsPerBatch; the OVSDB port committer of vswitchd/writer weighs a port and
// its interfaces), so a stream of
// large bonds is split over several transactions.
//
// # Isolating failures
//
// A request that cannot be committed is best refused before it joins a batch: Options.Check
// (by default the Committer's Check method; vswitchd/writer's port committer refuses NUL bytes,
// invalid UTF-8 and what package limits refuses) fails it at once, so it never costs its neighbours anything —
// ovsdb-server answers a NUL by dropping the session, an error no bisection can attribute.
//
// A Committer reports either one Outcome per request (per-item success or error: only those
// items fail) or an error for the whole batch, meaning nothing was applied. A whole-batch error
// is handled in this order:
//  1. an *ItemError names the requests that caused it: they get its error, and the rest is
//     committed again at once without them (one extra commit per culprit);
//  2. otherwise, when the error is divisible (Options.Divisible, else the Committer's own
//     Divisible method, else every error that is not a context error) and the batch has more
//     than one request, the batch is split in two halves committed one after the other,
//     recursively, so one bad request among n costs about 2·log2(n) extra commits and its
//     neighbours still succeed;
//  3. otherwise (a transient or ambiguous error: lost connection, timeout waiting for
//     ovs-vswitchd) every request of the batch gets the error. Nothing is retried that might
//     already have been applied.
//
// Every retry removes or halves something, so isolation always terminates. Retries of a batch
// use its in-flight slot: they never overlap with other batches beyond MaxInFlight.
//
// # Cancellation
//
// A caller whose context ends while its request waits in the queue has it removed and gets
// ctx.Err(); nothing was sent. Once the request has been sent, the caller still returns at once
// with an error matching both ctx.Err() and ErrOutcomeUnknown: the batch goes on for the other
// callers, so the change may still be applied; a reconciler learns the truth from OVSDB. A request
// whose caller has gone is left out of isolation retries.
//
// # Stopping
//
// Close stops accepting requests (Submit returns ErrClosed), commits what is queued and waits for
// the batches in flight. If its context ends first, the commits in flight are cancelled (their
// callers get the committer's error, typically a context error) and the queued requests fail with
// ErrClosed. Close returns only when the dispatcher goroutine and every commit have returned.
//
// The package knows nothing of OVSDB: its Committer for port requests, which commits a batch as
// one ovsdb.Txn waiting for ovs-vswitchd and maps each interface's ofport or Interface.error back
// to its request, is the port door of package vswitchd/writer.
package batch
