// Package bench holds side-by-side benchmarks of ovsplane against the tools users would otherwise
// use (ovs-vsctl, ovsdbapp). Results go to docs/benchmarks.md with the commands that produced them.
package bench
