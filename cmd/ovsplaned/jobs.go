package main

import "github.com/ovsplane/ovsplane/plugins/api"

// DataPath implements vswitchd/jobs.DataPaths: the supervised data path of the plugin
// serving a job type, for the daemon's job manager.
func (p *pluginHost) DataPath(jobType string) (api.DataPath, string, bool) {
	return p.h.DataPath(jobType)
}
