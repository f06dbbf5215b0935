// Package flow defines Record, one flow as an exporter reported it, after decoding and
// enrichment. It is the single vocabulary shared by the collector, the stores and the queries,
// so none of them depends on another's types.
//
// A Record holds no pointers but its names and addresses, and is passed by value inside
// reusable slices: the ingest path never allocates per record.
package flow
