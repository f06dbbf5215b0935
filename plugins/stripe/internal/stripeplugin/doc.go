// Package stripeplugin is ovsplane's plugin "stripe" (issue 16): a data-path job type "stripe"
// that carries traffic between this node and its peers over several kernel NICs, one
// stripe/engine per peer (AF_PACKET links, discovery of the peers' MACs, a send policy fed with
// the links' EWMA loads, acks, retransmission and in-order delivery), and streams its numbers
// as stats samples, which `vsctl plugin stats stripe` shows.
//
// The plugin takes no plugin-level configuration; each job's configuration (Config, the job's
// JSON object) names the node, the links, the peers and the policy's parameters. A job is
// started by the daemon from the plugin entry's jobs in the configuration file:
//
//	plugins:
//	  - name: stripe
//	    path: ovsplane-plugin-stripe
//	    sha256: …
//	    jobs:
//	      - name: stripe0
//	        type: stripe
//	        config: {node: 1, links: [{interface: eth1, capacity_mbit: 1000}], peers: [{node: 2}]}
//
// Each job serves the application endpoint (stripe/endpoint) over its engines: a unix socket,
// by default <plugin data dir>/<job>.sock, and optional TCP/UDP addresses in the job's
// namespace (EndpointConfig). Applications register, send and receive in order, each paced to
// its fair share; the samples carry every application's share, rates and drops (as many as
// fit one sample). When a peer's plugin restarts, the engines reset the affected connections
// cleanly (frame.FlagReset) and the samples count it.
//
// A peer's transparent option (TransparentConfig, transparent.go) runs the transparent mode
// towards it: the job creates a tun device in its namespace and runs stripe/tunnel on the
// peer's engine, so an ordinary TCP or UDP connection between the two nodes' tun addresses is
// striped without the applications knowing; the engine's deliveries are split by service
// between the tunnel and the endpoint.
//
// In mode ovs-dpdk (ovsmode.go) the NICs stay ports of an OVS bridge: the job opens lanes,
// internal ports of that bridge made by a port object of the plugin's type stripe-lanes
// (lanes.go), paces every link to its pace_mbit, and the plugin's Flows binds lane i to NIC i
// (stripe/ovslane).
//
// Health is Degraded while a peer is unknown (no hello heard), a link is unusable, a
// transparent device stopped or an ovs-dpdk job's rules are refused by its bridge, Failing
// when an engine stopped. Still to
// come: one engine (or one set of sockets) serving several peers.
package stripeplugin
