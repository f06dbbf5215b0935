// Package layers holds the test of ovsplane's layer rules, the floors of docs/architecture.md
// ("The house: floors and rules"). It has no code: layers_test.go loads the module's import graph
// with `go list -deps -json ./...` and fails, naming each offending import and the rule it
// breaks, when a package imports one on a higher floor, when product code imports test support,
// when model or ovsdb/datum reach beyond their allowed imports, or when vsctl's dependency
// closure takes in the daemon or its heavy libraries.
package layers
