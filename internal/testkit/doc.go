// Package testkit is the one home of the generic helpers the repository's tests share: a
// goroutine-safe log buffer, a poll-until-true wait, building a main package (once per test
// binary, or into a plugin dir with its SHA-256 pin), short temporary directories for unix
// socket paths, a free TCP address, and a child process with its output captured.
//
// It is test support only: it imports testing and product code must never import it.
package testkit
