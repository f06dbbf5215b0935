package api

// The plugin host's answers to ovsplaned. Plugins never see these types (they do not cross the
// wire): they are here, in the contract both plugins/host and ovsplaned's core import, so that
// each has one definition instead of a copy on each side of cmd/ovsplaned.

// PluginFlows is one plugin's desired flows and groups on a bridge (plugins/host.Host.Flows),
// which ovsplaned's flow syncer programs.
type PluginFlows struct {
	Plugin string
	// Cookies and Groups are the plugin's ranges: the daemon adds, modifies and deletes only
	// flows with these cookies and groups with these ids for it.
	Cookies CookieRange
	Groups  GroupRange
	// Set is the plugin's whole set, cookies filled in (0 becomes Cookies.Value).
	Set FlowSet
	// Err is set when the plugin could not answer or answered with flows or groups outside
	// its ranges; the daemon then leaves the plugin's current flows alone (no prune).
	Err error
}

// ReplayResult is the outcome of re-attaching one port the daemon owns after its plugin
// (re)started (plugins/host.Options.Replayed): the request replayed and what the plugin's
// Attach returned, or why it failed.
type ReplayResult struct {
	Request    PortRequest
	Attachment Attachment
	Err        error
}
