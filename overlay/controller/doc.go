// Package controller is the overlay's controller role (issue 17): at most one controller is
// active, elected through the fabric database's lease. While it holds the lease it reads the
// registered nodes and measured links, computes every node's route table with overlay/route,
// and publishes a new route version only when the tables differ from the current version's.
// It keeps a digest of the tables last published (or found in the database on taking the
// lease), so an unchanged graph costs no publish attempt at all. When the lease is lost
// (renewal fails, another holder, or a publish is fenced) it stops publishing at once.
//
// Table format (fabric.Tables, node → destination → value): for every reachable super node
// D other than the node itself, D → "NEXTHOP COST"; for a super node, each attached ordinary
// node X → "X COST" (direct delivery); for an ordinary node, each of its supers S under the
// key "att.S" → "S COST". Costs are overlay/route costs (µs per 1 Mbit burst), so a metric
// change that moves costs yields a new version even when no next hop moves.
package controller
