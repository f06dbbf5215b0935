// Package reconcile converges OVSDB to ovsplaned's desired state (config.DesiredState): the
// owned Open_vSwitch.other_config keys and the owned bridges with their ports and interfaces.
//
// # Passes
//
// A Reconciler works in passes. Each pass reads the rows its owner holds (Client.Owned,
// Client.OwnedGlobal) from the client's view of OVSDB, never from its own memory, and builds ONE ovsdb.Txn: first the
// deletions (owned ports, bridges and other_config keys that the desired state no longer lists),
// then the ensures (SetGlobal, EnsureBridge, EnsurePort for everything desired). Since every
// intent of package ovsdb is idempotent and guarded, a pass over a converged database writes
// nothing, and a pass after someone edited or deleted an owned row repairs exactly that. Only
// rows tagged with the client's owner are listed by Owned, so rows of others are never pruned.
// The batcher of package vswitchd/batch is not used: a pass is already one transaction.
//
// # Conflicts stay with their object
//
// When the planner or OVSDB refuses one object — a port or interface name that a foreign row
// holds (ovsdb.ErrNotOwned, ovsdb.ErrConstraintViolation), a bridge that does not exist, a
// spec the database rejects — the pass leaves that object's intent out, plans again and commits
// the rest: every other object is still created, changed, pruned or repaired. The refused
// object's status (and its interfaces') is Error with the refusal, which names the row, its
// owner and the fix; LastError lists every refusal of the last pass. The object is tried again
// at every pass (an OVSDB change, Update, Resync), so it is created as soon as the conflict is
// gone. Errors that no single object explains (connection lost, ovs-vswitchd not
// acknowledging, concurrent writers beyond the retries) still fail the whole pass.
//
// A restarted daemon needs no local state: the first pass prunes the owner's stale rows found in
// OVSDB. Rows are tagged with a generation: on the first pass it is one more than the highest
// generation found among the owned rows, and every Update that changes the desired state
// increments it. Only rows a pass writes for another reason get the new generation: a restart
// or reload that changes nothing sends no transaction at all.
//
// # Units
//
// Rows whose external_ids carry the same UnitKey value (a plugin object's ports and bridges)
// are one unit: a pass writes, prunes or leaves out all of them, never some, and the status of
// the unit's port (named like the value) is the unit's: error when one of its rows is, pending
// while one is.
//
// # Status
//
// Every desired bridge, port and interface has a Status: pending, ready (interfaces with their
// ofport) or error (with ovs-vswitchd's Interface.error, or the pass's error). Statuses are
// recomputed from the client's cache after every pass and on every OVSDB change notification.
// Status returns a snapshot; Watch returns a channel closed at the next change, and
// Options.OnChange receives the changed statuses.
//
// # Run
//
// Run passes at start, after Update, when OVSDB changes (drift: a deleted or edited owned row)
// and every Options.Resync; after a failed pass it retries with exponential backoff. It returns
// when its context ends.
//
// # Controllers and failed bridges
//
// A bridge's controllers (model.Bridge.Controllers) are Controller rows owned like every other
// row and referenced from Bridge.controller (ovsdb.Txn.EnsureBridge): controllers others
// added to an owned bridge are kept, owned ones no longer desired are removed, and deleted ones
// come back at the next pass. A bridge ovs-vswitchd could not create (ovsdb.Client.BridgeErrors:
// an unknown datapath_type, the kernel datapath without its module) has State Error with the
// cause and the fix, and so do its ports' interfaces, instead of staying pending.
//
// # Another writer fighting over an owned column
//
// Before a drift pass (nothing new to apply) the reconciler compares the owned columns of each
// owned bridge — datapath_type, fail_mode, protocols — with the desired bridge
// (ovsdb.Client.OwnedBridgeColumns); a difference is another writer's change, which the pass
// repairs. Options.ConflictRepairs repairs of the same column of the same bridge within
// Options.ConflictWindow (default 3 within 10 minutes) are a Conflict: the bridge's status is
// Error with the column, the other writer's value, ovsplaned's and the fix (for datapath_type,
// the OpenStack setting that makes os-vif stop writing "system"; for fail_mode and protocols,
// Neutron's OVS agent), one error line is logged when it starts, Options.OnConflict hears
// every repair (ovsplaned exports ovsplane_reconcile_conflict and
// ovsplane_reconcile_conflict_repairs_total), and it ends a window after the last repair.
//
// The reconciler keeps repairing, at the pace of drift passes (DriftDelay after OVSDB went
// quiet), with no further backoff. It does not yield: the configured value is the one the host
// needs (a DPDK bridge moved to "system" loses every vhost-user port, and on a host without the
// openvswitch module the bridge fails outright), the damage is done by the other writer's flip,
// not by the repair, and delaying the repair only lengthens each outage. What was wrong before
// is that the fight was silent; the conflict makes it visible so that the operator fixes the
// other writer (docs/openstack.md).
//
// Not handled yet: moving a port from one bridge to another in one pass.
package reconcile
