// Package writer is ovsplaned's one writer of OVSDB. Every transaction the daemon sends goes
// through a Writer, by one of its doors:
//
//   - Pass: the reconciler's pass (package vswitchd/reconcile), which reads the owned rows and
//     commits one transaction (plus its isolation retries);
//   - ApplyBridge and DeleteBridge: the API's bridge changes, one transaction each;
//   - EnsurePort and DeletePort: the API's port changes, coalesced by a batch.Batcher into one
//     transaction and one ovs-vswitchd acknowledgement per batch. EnsureObject and DeleteObject
//     are the same door for a plugin object of several ports and bridges: one request, so one
//     transaction, holds all its rows, and it succeeds or fails whole.
//   - InterfaceConfig: the watcher plugins' other_config changes (package vswitchd/watch), one
//     transaction per answer, without waiting for ovs-vswitchd.
//
// # One turn
//
// A Writer owns a single turn: a door writes only while it holds it, so no door ever sees
// another one half done (a pass never reads the owned rows in the middle of a batch, a batch
// never lands between a pass's read and its commit). A door waiting for the turn gives up
// when its context ends; a pass that looks for drift does not wait at all (Pass with wait
// false), since the writer holding the turn causes the changes it would look at, and it gives
// way too while a port batch waits for ovs-vswitchd (the changes are then ours, and
// ovs-vswitchd applying them needs the CPU the look would take).
//
// What a door's caller records about its outcome (the daemon's API objects) is recorded while
// the door still holds the turn: ApplyBridge and DeleteBridge call their settle function, and
// every port batch calls Options.Settle once OVSDB has committed it, before the next door may
// write.
//
// # One conversion
//
// The Writer owns the conversion from the desired state's shapes (model.Bridge, model.Port)
// to the ovsdb package's specs: BridgeSpec and PortSpec, used by its own doors and by the
// reconciler's pass.
//
// # Batches of ports
//
// The port door keeps the batcher's semantics (see package batch): requests for one port never
// share a batch; Check refuses a request OVS cannot take before it is queued, so it never fails
// its neighbours; Weight bounds the rows of a batch; a whole-transaction refusal that names
// requests (an *ovsdb.OpError naming a port, interface or bridge) fails only those, and one
// that names none is bisected; ovs-vswitchd's refusal of an interface fails only its request
// while the transaction stays committed for the others. Every batch waits for ovs-vswitchd's
// acknowledgement (next_cfg/cur_cfg) and reports each interface's ofport.
//
// # Pipelined batches
//
// A port batch holds the turn only to commit (and settle): it waits for ovs-vswitchd's
// acknowledgement after releasing it, so the next batch is committed while ovs-vswitchd applies
// this one, and ovs-vswitchd, which coalesces every change pending when it looks, never waits
// for the daemon between two reconfigurations. Options.BatchDepth bounds the batches in flight
// (committed or being committed, and not yet acknowledged); each caller is answered when
// cur_cfg reaches its own transaction's next_cfg. Requests for one port are never in flight
// together (the batcher's key), so they apply in order; isolation retries happen before
// anything is written and keep their batch's slot. A batch's size is bounded by what the
// measured apply time allows (Options.ApplyTarget, PipelineStats.SizeLimit), so a backlog is
// spread over transactions ovs-vswitchd applies one after the other, each acknowledged in
// bounded time. The apply time is modelled as a fixed part and a part per request, both
// proportional to the switch's interface count (the DB's InterfaceCount, when it has one),
// and read at the switch's current size; a batch is never cut below the size whose
// per-request part is twice the fixed part, nor for the target once the fixed part takes
// half of it, and the batches in flight are kept within half of the apply timeout. On a switch
// so large that a full batch sized for overlap would take over half of what each overlapping
// batch could have of that (15 s at the default 2-minute timeout), batches go one at a time
// instead (the batcher's InFlightLimit; each caller then waits for one reconfiguration, not
// several), each sized for the whole budget. Writer.Pipeline reports the transactions waiting for ovs-vswitchd and
// the fitted model.
package writer
