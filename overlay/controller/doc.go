// Package controller is the overlay's controller role (issue 17): at most one controller is
// active, elected through the fabric database's lease. While it holds the lease it reads the
// registered nodes and measured links, computes every node's route table with overlay/route,
// and publishes a new route version only when the tables differ significantly from the
// current version's (hysteresis, below). It keeps the tables last published (or found in the
// database on taking the lease), so an unchanged graph costs no publish attempt at all. When the lease is lost
// (renewal fails, another holder, or a publish is fenced) it stops publishing at once.
//
// Routes are kept between rounds: when only link metrics changed (same nodes, kinds and
// links), each changed link goes through overlay/route's incremental Router.SetLink instead of
// a full recomputation, and when nothing changed no route is computed at all (Stats.Full,
// Incremental, Unchanged).
//
// Liveness: a node whose last-seen time (moved by its registration, acknowledgements and
// heartbeats) stays unchanged for Config.StaleAfter by the controller's own clock is marked
// fabric.HealthStale (so clocks of nodes and controller need not agree). A stale node no
// longer holds the minimum applied version back, and a stale super node is left out of the
// route graph: it cannot install new versions, so it must not relay traffic routed by them.
// A stale ordinary node keeps its routes (it relays nothing; the other nodes' routes to it
// go through its supers either way). Its next heartbeat or acknowledgement marks it up.
// Each round the controller also records the slowest running node's applied version in
// Fabric_Global.min_applied_version when it moved (OVN's hv_cfg).
//
// Table format (fabric.Tables, node → destination → value): for every reachable super node
// D other than the node itself, D → "NEXTHOP COST"; for a super node, each attached ordinary
// node X → "X COST" (direct delivery); for an ordinary node, each of its supers S under the
// key "att.S" → "S COST". Costs are overlay/route costs (µs per 1 Mbit burst).
//
// Hysteresis: a round publishes a new version when a destination appeared or disappeared, a
// next hop changed, or some cost moved by more than Config.CostHysteresis (default 20 %) of
// its value in the published version. Smaller cost moves are noise (probe RTTs grow with load
// on the links they measure) and publish nothing (Stats.Suppressed): otherwise every wiggle
// would be a version rewriting flows on every site. The comparison is with the published
// version, not the previous round, so a slow drift publishes once it has added up.
package controller
