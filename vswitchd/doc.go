// Package vswitchd is the core of ovsplaned, the ovsplane daemon: desired state from the config
// file and the API, the reconciler, the batcher that groups concurrent changes into one OVSDB
// transaction, the API server and the embedded OVSDB mode. It reaches OVSDB only through package
// ovsdb and plugins only through plugins/host.
//
// The daemon itself is built in a later issue; this package holds its place in the layout.
package vswitchd
