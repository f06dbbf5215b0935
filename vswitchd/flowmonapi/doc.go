// Package flowmonapi is the daemon's view of the flowmon plugin's flows (issue 18): JSON
// endpoints that forward to a flowmon-collector job's query socket, and a web page with a
// throughput chart, the top talkers and a flow search, served under /flowmon/ by the API
// server (vswitchd/apiserver mounts the Handler behind its authentication, roles and limits;
// every path here is a read).
//
//	GET /flowmon/                     the page (index.html, app.js, style.css; embedded, no
//	                                  network beyond this daemon)
//	GET /flowmon/v1/collectors        the collector jobs whose query sockets exist
//	GET /flowmon/v1/query?PARAMS      a query (flowmon/query.ParseValues' parameters: since or
//	                                  from/to, src, dst, sport, dport, proto, bridge, port,
//	                                  exporter, top, by, n, series) answered as query.Wire
//	GET /flowmon/v1/status            the collector's counters (query.Status)
//
// Both data endpoints take job=NAME to pick a collector; without it the only one running is
// asked. The collector job owns its store (DuckDB allows one writing process), so the daemon
// never opens a store: it validates the query (query.ParseValues, so a bad query never reaches
// the collector), resolves relative times against its own clock and forwards the absolute
// query over HTTP on the job's unix socket <sockets dir>/<job>.sock, where the sockets dir is
// the flowmon plugin's data dir, <data_dir>/plugin-data/flowmon.
//
// Errors are {"code": ..., "message": ...} with the Connect protocol's codes, as the rest of
// the API answers: invalid_argument (400) for a bad query, failed_precondition (400) when no
// collector job runs or several run and job is missing, not_found (404) for an unknown job or
// endpoint, unavailable (503) when the collector does not answer, is busy or its store failed,
// deadline_exceeded (504) when it answers too late.
package flowmonapi
