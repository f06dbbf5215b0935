// Package query is the flowmon query model: what a caller may ask of a flow store (a time
// range, filters, and one of a flow listing, a top-N or a time series) and the shape of the
// answer. Every store answers the same Query with the same Result, so the CLI, the API and the
// web page share one vocabulary and one test suite runs against every store.
//
// A Query is bounded before any store sees it: Validate names the field at fault and the fix.
package query
