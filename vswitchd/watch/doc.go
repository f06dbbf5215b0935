// Package watch delivers the interfaces Open vSwitch holds to the plugins with the Watcher
// capability: a snapshot when a plugin (re)starts, then every add, change and removal of the
// interfaces (with their port and bridge) its api.WatchFilter selects, whoever wrote them
// (ovsplaned, its plugins, ovs-vsctl, os-vif through ovsdbapp, an operator), with what
// ovs-vswitchd reports (ofport, error). It writes back, through the daemon's one OVSDB writer,
// the other_config changes the plugins ask for.
//
// # Where the events come from
//
// The daemon's OVSDB client already keeps a cache of the Interface, Port and Bridge tables
// through its monitor. An ovsdb.InterfaceWatch marks the interfaces that changed (an Interface
// row, the Port holding it, or its Bridge's ports); the Dispatcher reads their current state
// from the cache after a short Debounce, compares it with the state it holds for each interface
// and offers the ones that differ to every running watcher's queue, in the order they
// changed. A full comparison runs after every reconnection (the cache is refilled without
// delete events) and every AuditInterval (libovsdb drops events when its buffer is full).
// Columns a PortEvent does not carry (link state, statistics, the host's own tags) never make
// an event by themselves.
//
// # Owners
//
// Owner comes from the daemon's tags: a port with the daemon's ovsdb.OwnerKey and the plugin
// key (vswitchd.PluginKey) is OwnerPlugin with that Plugin; a port or interface with the
// daemon's owner tag otherwise is OwnerOvsplane; anything else is OwnerForeign. The host's own
// external_ids keys (api.ReservedKeyPrefix) are not delivered and cannot be filtered on.
//
// # Queues
//
// Each plugin has one bounded queue (see queue) and one delivery goroutine; one batch is in
// flight at a time. The queue holds the latest state of each interface waiting, at most
// MaxPending of them: a newer state replaces an older one, so a burst on one interface costs
// one entry, and an interface added and removed before delivery costs nothing. When one more
// interface would exceed the bound, the queue drops every pending state and the plugin gets a
// resync instead: a slow or stuck plugin costs the daemon at most MaxPending states, whatever
// the rate of changes, and never stalls anything but its own deliveries. A batch holds at most
// MaxBatchEvents events and MaxBatchBytes (an event larger than limits.MaxPortBytes is
// delivered without its maps). A snapshot is sent in such batches: the first has Resync, the
// last ResyncDone, each event is EventAdded and carries the interface's state when its batch
// is built; changes during a snapshot follow it.
//
// An error from OnPortEvents (a plugin's own, a timeout, a crash) puts the batch's states back
// unless newer ones arrived, and the batch goes again after a pause growing from RetryMin to
// RetryMax, or at once when the plugin restarted (then as a snapshot).
//
// # Interface changes
//
// What a plugin answers is written by Applier (writer.Writer.InterfaceConfig, then
// ovsdb.Txn.SetInterfaceConfig) in a transaction of its own, after the batch: only
// other_config keys, only on interfaces live in the batch. A key the plugin sets is recorded in
// the interface's external_ids under ovsdb.InterfaceKeysPrefix+<plugin> (e.g.
// "ovsplane-other-config-dsa" = "dma-channels,dma-mode"); a key someone else set is left as it
// is; Remove removes only keys recorded for that plugin. Refusals are logged and counted
// (Stats.Ignored), never errors: the next event shows the interface as it is. The daemon's own
// writes keep recorded keys on the interfaces it owns (ovsdb keeps them through EnsurePort).
//
// # Statuses
//
// An answer's api.InterfaceChange.Status replaces the plugin's status of a live interface of
// the batch (the empty status clears it). The Dispatcher keeps them per plugin, in memory only
// (never in OVSDB), at most Options.MaxStatuses interfaces per plugin (past it a status for one
// more interface is refused and counted), and Statuses reports them with where each interface
// is now, for the API's ListStatus, vsctl status and the metrics. A status goes when its
// interface leaves the cache, when the plugin is told it is removed (it left the filter), when
// a snapshot ends without listing it, and all of a plugin's go when it stops, restarts (a new
// Instance) or leaves the set of watchers. A new Watcher.Configured (the plugin accepted
// another Configure) starts a snapshot, so the plugin computes its statuses again.
package watch
