// Package ovsdb is the daemon's door to the Open_vSwitch database: a cached, reconnecting client
// on libovsdb with typed, idempotent operations. The daemon core (vswitchd, vswitchd/reconcile,
// vswitchd/batch) writes OVSDB only through it.
//
// It is not the only package on the database. Its neighbours under ovsdb/: vswitch (the models
// generated from the schema, on libovsdb's model package), dbcmd (a second, lean JSON-RPC client
// without a cache, for vsctl's short-lived invocations; the daemon uses it only to probe
// ovs-vswitchd's lock), embedded (an OVSDB server of our own, on libovsdb's database engine, for
// the daemon's embedded mode), simvswitchd (a simulated ovs-vswitchd, a libovsdb client) and
// ovsdbtest (libovsdb's in-memory server for tests). See docs/decisions for why there are two
// clients and two servers.
//
// # The client
//
// Dial connects to one of the configured endpoints ("unix:/run/openvswitch/db.sock",
// "tcp:10.0.0.1:6640", "ssl:…"; several for a clustered database, where writes go to the Raft
// leader), fills a cache of just the tables the operations need (Open_vSwitch, Bridge, Port,
// Interface, Controller) and keeps it current through an OVSDB monitor. When the connection drops the client
// reconnects by itself with exponential backoff and resynchronises the cache; transactions sent
// meanwhile wait for the connection, bounded by their context and, with
// CommitOptions.ReconnectWait, by how long the connection has been down: then Commit fails with
// a *DisconnectedError that says whether nothing was sent or an attempt in flight left the
// outcome unknown. Reads of the cache never wait for the connection.
//
// # Transactions
//
// Changes are intents collected in a Txn and committed atomically, as one OVSDB transaction:
//
//	res, err := c.NewTxn(gen).
//		EnsureBridge(model.Bridge{Name: "br0", DatapathType: "netdev"}, nil).
//		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "dpdk0", Interfaces: []model.Interface{{
//			Name: "dpdk0", Type: "dpdk",
//			Options: map[string]string{"dpdk-devargs": "0000:01:00.0"},
//		}}}}).
//		Commit(ctx, ovsdb.CommitOptions{})
//
// The intents speak package model, the types the configuration, the API and the daemon use: a
// port has one Go shape (model.Port) from the API down to the transaction; only the OVSDB rows
// (package vswitch) differ. A port intent names its bridge beside the port (PortOn); a bridge
// intent carries no ports (each port is its own intent). Zero fields mean the OVS default. Map
// columns are made equal to the intent (other_config, options), except external_ids: there the
// intent's keys are set and keys added by others (ovn-controller, os-vif) are left alone, so a
// key dropped from the intent stays until removed by hand.
//
// Every intent is idempotent (ensure what exists: nothing is written; delete what is absent:
// no-op). A new port is created with all its columns and interfaces in the same transaction that
// creates it, never as a create followed by a set. Set and map columns are changed with mutate
// insert/delete; Bridge.ports in particular is never rewritten whole, so adding one port to a
// bridge of thousands costs the same as to an empty one, and a port another writer adds at the
// same moment is not lost. Every decision taken from the cache carries a "wait" operation that
// asserts what was read is still true, so a concurrent writer (ovs-vsctl, os-vif) makes the
// transaction fail harmlessly; Commit then re-plans from the refreshed cache and retries.
//
// # Ownership
//
// Every row created here carries two keys in external_ids: OwnerKey (Config.Owner) and
// GenerationKey (the generation given to NewTxn). Client.Owned lists the tagged rows, so a
// restarted daemon rebuilds its view from OVSDB alone and prunes only its own stale rows. A row
// without our owner tag is never modified or deleted: such requests fail with ErrNotOwned and
// nothing is written. Open_vSwitch.other_config keys set through SetGlobal are recorded as owned
// in Open_vSwitch.external_ids. A bridge's controllers (model.Bridge.Controllers) are Controller
// rows tagged the same way, referenced from Bridge.controller by mutation: controllers others
// add to the bridge are kept. Its flow export (NetFlow, IPFIX, sFlow, IPFIX collector sets) is
// tagged rows too, created with the column that refers to them (flowexport.go); an export row
// someone else set on the bridge is never touched, and Client.BridgeExports reports it. A
// bridge's mirrors (mirror.go) and a port's QoS with its queues (qos.go) follow the same rules;
// QoS and Queue are root tables, so their owned rows are deleted when unlinked, and
// Client.BridgeMirrors and Client.PortQoSes report foreign rows.
//
// # Acknowledgement from ovs-vswitchd
//
// Unless CommitOptions.NoWait is set, the transaction also increments Open_vSwitch.next_cfg and
// Commit waits (WaitApplied) until ovs-vswitchd reports cur_cfg ≥ that value — the moment
// ovs-vswitchd has really applied the change, exactly the acknowledgement ovs-vsctl waits for.
// It then reports each created or changed interface's ofport, link state and Interface.error;
// interfaces that ovs-vswitchd could not set up come back as an *ApplyError naming each one with
// ovs-vswitchd's own message. A bridge ovs-vswitchd could not create has no error column:
// Client.BridgeErrors recognises it (configuration applied, no datapath_id, no ofport on its
// local interface) and says why. The wait is bounded by the context: a deadline yields an error
// matching ErrTimeout that says how far ovs-vswitchd got, a cancel returns at once.
//
// # Errors
//
// OVSDB operation errors become *OpError values naming the table, row and (when the server says)
// column, and matching one of the sentinels: ErrConstraintViolation, ErrReferentialIntegrity,
// ErrTimeout, ErrNotConnected, ErrNotOwned, ErrNotFound, ErrConflict, ErrInvalid. ovs-vswitchd's
// per-interface errors match ErrVswitchd. ErrNotFound and ErrInvalid are model.ErrNotFound and
// model.ErrInvalid, the error kinds the daemon and its API answer with too; ErrConflict
// (contention: the retries ran out) is this package's own.
package ovsdb
