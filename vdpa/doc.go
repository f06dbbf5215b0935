// Package vdpa will manage mlx5 vDPA devices through sysfs and netlink, behind small interfaces
// so that tests run against a faithful fake kernel. It is built with the vdpa plugin.
package vdpa
