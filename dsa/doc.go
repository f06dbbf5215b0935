// Package dsa is reserved for Intel DSA support (discovering and configuring DSA work queues
// through sysfs, idxd). Nothing is implemented yet: the package has no code, nothing imports it,
// and there is no dsa plugin.
package dsa
