// Package overlayapi is the daemon's read-only view of the overlay fabric (issue 17): JSON
// endpoints over the fabric database (overlay/fabric) and a small web page drawing it, served
// under /overlay/ by the API server (vswitchd/apiserver mounts the Handler, behind its
// authentication, roles and limits; every path here is a read).
//
//	GET /overlay/                     the page (index.html, app.js, style.css; embedded, no
//	                                  network beyond this daemon)
//	GET /overlay/v1/nodes             registered nodes with their applied version and health
//	GET /overlay/v1/links             measured links with metrics and their route cost
//	GET /overlay/v1/routes?node=N[&version=V]   N's route table of version V (default: the
//	                                  newest published)
//	GET /overlay/v1/versions          the newest route version, the slowest node's, the
//	                                  controller lease, each node's applied version
//	GET /overlay/v1/lookup?src=A&dst=B   the path forwarding takes from A to B, its cost, and
//	                                  the route version it is computed against
//
// Answers are JSON objects (the types below, snake_case names). Errors are
// {"code": ..., "message": ...} with the Connect protocol's codes and HTTP statuses, as the
// rest of the API answers: invalid_argument (400) for a bad query, not_found (404) for a node
// the fabric does not have or a pair with no route, failed_precondition (400) when the
// daemon's configuration names no fabric (overlay.fabric_remotes), unavailable (503) when the
// fabric cannot be reached or too many overlay requests are in flight.
//
// The lookup computes the path with overlay/route from the fabric's current nodes and links,
// converted exactly as the controller converts them (links with an unknown end, two ordinary
// ends, no bandwidth or metrics out of overlay/route's ranges are left out), and compares the
// route tables this state yields (overlay/controller.Tables) with the stored tables of the
// newest published version: InEffect says they are equal, so the path is the one nodes running
// that version forward on; otherwise the fabric changed since it was published and the
// controller will publish the next version.
//
// The fabric client is opened on first use (Options.Open) and kept; it reconnects by itself.
// It is a reader: it never registers, reports, publishes or acks. (Its first read of a brand
// new database creates the empty Fabric_Global row, as every fabric client does.)
package overlayapi
