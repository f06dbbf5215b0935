// Package dsa will discover and configure Intel DSA work queues through sysfs (idxd), behind small
// interfaces so that tests run against a faithful fake kernel. It is built with the dsa plugin.
package dsa
