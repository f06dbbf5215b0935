// Package vswitchd is the core of ovsplaned, the ovsplane daemon (cmd/ovsplaned). Despite its
// name it is not Open vSwitch's ovs-vswitchd: it is the controller that keeps the
// Open_vSwitch database converged to a desired state, and ovs-vswitchd is the switch that
// database configures.
//
// The Daemon type (New, Run, Close) owns the desired state — the configuration file's
// bridges and ports plus those created through the API — and drives OVSDB towards it:
//
//   - the reconciler (vswitchd/reconcile) makes whole passes over the configured state and
//     repairs drift;
//   - API port changes (ApplyPort, DeletePort) are coalesced by a batcher (vswitchd/batch) into
//     one OVSDB transaction and one ovs-vswitchd acknowledgement per batch; API bridge changes
//     commit their own transaction;
//   - one writer (vswitchd/writer) serialises those three doors, so none sees another half done;
//   - API objects are stored in OVSDB itself (OriginKey, SpecKey in external_ids), adopted
//     again by New after a restart, and a commit whose outcome is unknown is settled by reading
//     OVSDB back;
//   - ports whose interface type a plugin provides are attached through the Plugins interface
//     (implemented in cmd/ovsplaned over plugins/host), plugins' other_config contributions are
//     merged, and their flows are kept on the bridges through the OpenFlow interface
//     (vswitchd/openflow);
//   - statuses, health, WaitReady and watch subscriptions are derived from the OVSDB cache, and
//     forced to an error while a probe (SwitchProbe) says ovs-vswitchd is not running.
//
// The Daemon is a façade over components with one owner each: objectStore (store.go,
// storecheck.go: the API's and the configuration's objects), attacher (attacher.go, attach.go,
// plugins.go: the ports of plugin types of both origins), flowSyncer (flows.go), statusHub
// (status.go), pluginGlobals (globals.go) and switchLiveness (liveness.go). Lock order:
// objectStore before attacher; see docs/architecture.md.
//
// It reaches OVSDB through package ovsdb (the cached libovsdb client) and, for the
// ovs-vswitchd lock probe only, through ovsdb/dbcmd's JSON-RPC connection. It sees plugins only
// through the contract types of plugins/api and the interfaces declared here, never the plugin
// host itself.
//
// The domain types (bridges, ports, statuses, the error kinds) are package model's.
// Sub-packages: config (configuration loading and validation), reconcile (the reconciler),
// writer (the one OVSDB writer), batch (the generic batcher), apiserver (the ovsplane.v1 API on
// the Daemon), metrics (Prometheus), openflow (the ovs-ofctl wrapper
// that programs plugins' flows) and sandbox (a private ovsdb-server and ovs-vswitchd for
// --sandbox). The embedded OVSDB mode lives in ovsdb/embedded with ovsdb/simvswitchd; the wiring
// of all of these is cmd/ovsplaned.
package vswitchd
