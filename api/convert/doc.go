// Package convert translates between the ovsplane.v1 API messages and the domain types of
// package model (specs, statuses, infos). It imports only api/gen and model, so clients that
// convert do not link the daemon. It is the one place
// both the API server and its clients convert, so a field added to the API is mapped once.
//
// Every function is pure and total: nil messages convert to zero values, empty maps and lists
// to nil (the canonical form, model.Port.Canonical), and values the other side cannot represent
// (an unknown enum) to the zero value.
package convert
