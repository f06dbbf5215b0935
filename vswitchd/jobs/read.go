package jobs

import (
	"maps"
	"slices"

	"github.com/ovsplane/ovsplane/model"
)

// Plugin returns the jobs of one plugin, sorted by name (none when it has none).
func (m *Manager) Plugin(name string) []model.JobInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.plugins[name]
	if p == nil {
		return nil
	}
	return p.infos()
}

// All returns every plugin's jobs, sorted by plugin, then name.
func (m *Manager) All() []model.JobInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []model.JobInfo
	for _, name := range slices.Sorted(maps.Keys(m.plugins)) {
		out = append(out, m.plugins[name].infos()...)
	}
	return out
}

// infos returns p's jobs as JobInfos (copies). Called with Manager.mu held.
func (p *pluginJobs) infos() []model.JobInfo {
	out := make([]model.JobInfo, 0, len(p.jobs))
	for _, n := range slices.Sorted(maps.Keys(p.jobs)) {
		j := p.jobs[n]
		info := model.JobInfo{Plugin: p.name, Name: n, Type: j.spec.Type, Port: j.port, State: j.state, Error: j.err,
			Status: j.status, Starts: j.starts, SampleTime: j.sampleTime, Metrics: slices.Clone(j.metrics)}
		if info.Error == "" {
			info.Error = j.sampleErr
		}
		out = append(out, info)
	}
	return out
}
