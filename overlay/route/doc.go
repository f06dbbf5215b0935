// Package route is the routing core of the overlay plugin (issue 17, seed 002): super-node routing
// over a graph of sites, computed in the seed's two phases and kept in the compressed form the
// nodes need.
//
// The model: super nodes (sites on several carriers) relay; ordinary nodes (one carrier) never
// relay and never talk to each other directly. Links are undirected and carry measured metrics
// (bandwidth, latency) from which a cost is derived (see [Metrics.Cost]). Routing:
//
//   - phase 1: all-pairs shortest paths among the m super nodes over super–super links only;
//   - phase 2: for every ordinary node and every destination super, the attached super through
//     which it reaches that destination most cheaply.
//
// Routes towards an ordinary node are not stored per destination: a forwarder picks the egress
// super among the destination's (at most [MaxAttachments]) attachments from the phase 1
// distances, so the state is O(m² + k·m) for k ordinary nodes, never n×n.
//
// Semantics (the subtlety noted in issue 17): ordinary nodes never relay, not even when an
// ordinary node tied to two supers would offer a cheaper detour than the super mesh. Distances
// are those of the directed graph in which ordinary nodes only originate and terminate traffic;
// docs/overlay.md explains the choice.
//
// A [Router] is not safe for concurrent use; callers serialise access.
package route
