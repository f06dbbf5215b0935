package vswitchd

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd/jobs"
)

// The daemon's side of the plugins' data-path jobs (vswitchd/jobs runs them): the jobs of
// the configuration file's plugin entries (New, Reload) and those of plugin ports
// (api.Attachment.Jobs, kept in the port's pluginPort), which run while the port's row is in
// OVSDB. The manager pulls portJobs on every pass; status changes and plugin changes kick it.

// newJobs returns the job manager, or nil without Options.DataPaths.
func (d *Daemon) newJobs(plugins []model.Plugin) *jobs.Manager {
	if d.opts.DataPaths == nil || d.opts.Plugins == nil {
		return nil
	}
	m := jobs.New(jobs.Options{DataPaths: d.opts.DataPaths, Plugins: d.opts.Plugins.Plugins, Ports: d.portJobs,
		Logger: d.log.With("component", "jobs"), Interval: d.opts.JobStatsInterval})
	m.SetConfig(plugins)
	return m
}

// portJobs returns the jobs of the attached plugin ports whose Port row OVSDB holds: started
// after the port is written, stopped once it is gone.
func (d *Daemon) portJobs() []jobs.PortJobs {
	d.att.mu.Lock()
	var out []jobs.PortJobs
	for _, name := range slices.Sorted(maps.Keys(d.att.ports)) {
		if at := d.att.ports[name]; at.pp != nil && len(at.pp.Jobs) > 0 {
			out = append(out, jobs.PortJobs{Plugin: at.pp.Plugin, Port: name, Jobs: slices.Clone(at.pp.Jobs)})
		}
	}
	d.att.mu.Unlock()
	written := out[:0]
	for _, pj := range out {
		if _, ok := d.c.Tags("Port", pj.Port); ok {
			written = append(written, pj)
		}
	}
	return written
}

// checkPortJobs checks the jobs a plugin's Attach asked for before they are stored with the
// port: at most limits.MaxJobsPerPort, each valid (limits.CheckJob), names unique. A refusal
// is the plugin's bug (ErrFailed): the port is not written and its attachment is detached.
func checkPortJobs(plugin, port string, js []api.Job) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: plugin %q returned data-path jobs for port %q that ovsplaned cannot run: %s", model.ErrFailed, plugin, port, fmt.Sprintf(format, args...))
	}
	if len(js) > limits.MaxJobsPerPort {
		return bad("%d jobs, more than %d (limits.MaxJobsPerPort)", len(js), limits.MaxJobsPerPort)
	}
	seen := map[string]bool{}
	for _, j := range js {
		if err := limits.CheckJob(j.Name, j.Type, j.Config); err != nil {
			return bad("%v", err)
		}
		if seen[j.Name] {
			return bad("job %q is listed twice", j.Name)
		}
		seen[j.Name] = true
	}
	return nil
}

// kickJobs asks the job manager for a pass (a status or a plugin changed). It never blocks.
func (d *Daemon) kickJobs() {
	if d.jobs != nil {
		d.jobs.Kick()
	}
}

// PluginStats returns the data-path jobs of a configured plugin with their state and latest
// stats sample, sorted by name; an error wrapping model.ErrNotFound for a plugin the
// configuration does not list.
func (d *Daemon) PluginStats(plugin string) ([]model.JobInfo, error) {
	if !slices.ContainsFunc(d.Plugins(), func(p model.PluginInfo) bool { return p.Name == plugin }) {
		return nil, fmt.Errorf("%w: no plugin named %q in ovsplaned's configuration (ListPlugins lists them)", model.ErrNotFound, plugin)
	}
	if d.jobs == nil {
		return nil, nil
	}
	return d.jobs.Plugin(plugin), nil
}

// Jobs returns every plugin's data-path jobs (for the metrics), sorted by plugin and name.
func (d *Daemon) Jobs() []model.JobInfo {
	if d.jobs == nil {
		return nil
	}
	return d.jobs.All()
}
