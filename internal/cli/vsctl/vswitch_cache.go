package vsctl

// vsCache is the bridge/port/interface cache of the vswitch commands (placeholder until the
// vswitch commands land).
type vsCache struct{}
