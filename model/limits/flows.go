package limits

// Bounds on the OpenFlow flows and groups one plugin may ask for on one bridge
// (api.FlowSet, checked by api.ValidateFlowSet before anything reaches the bridge). They keep
// one plugin from filling a bridge's tables, from making every sync of the daemon slow, and
// from sending ovs-ofctl text large enough to hide anything in.
const (
	// MaxFlowsPerPlugin is the most flows one plugin's FlowSet may hold for one bridge.
	MaxFlowsPerPlugin = 8192
	// MaxFlowBytes is the most bytes a flow's Match and Actions may hold together, and the
	// most a bucket's Actions may hold.
	MaxFlowBytes = 4096
	// MaxGroupsPerPlugin is the most groups one plugin's FlowSet may hold for one bridge.
	MaxGroupsPerPlugin = 1024
	// MaxBucketsPerGroup is the most buckets one group may hold (a select group striping
	// over many ports included).
	MaxBucketsPerGroup = 256
)
