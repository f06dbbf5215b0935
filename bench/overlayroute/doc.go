// Package overlayroute benchmarks the overlay routing core (overlay/route, issue 17) side by
// side with gonum's DijkstraAllPaths and a plain two-phase all-pairs computation, on
// seed-shaped graphs (meshed super nodes, each ordinary node tied to 1–3 supers). Every arm runs
// in a child process of the test binary so its peak RSS is its own. The code is in the _test
// files; `make bench-overlay-route` runs it and docs/benchmarks.md has the numbers.
package overlayroute
