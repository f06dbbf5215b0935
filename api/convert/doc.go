// Package convert translates between the ovsplane.v1 API messages and the daemon's types
// (vswitchd/config specs, vswitchd/reconcile statuses, vswitchd infos). It is the one place
// both the API server and its clients convert, so a field added to the API is mapped once.
//
// Every function is pure and total: nil messages convert to zero values, empty maps and lists
// to nil (the config package's canonical form), and values the other side cannot represent
// (an unknown enum) to the zero value.
package convert
