package config

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
)

var (
	pluginName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sha256Hex  = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// validatePlugins checks the plugin list: names, paths inside the plugin dir, pins, a config
// JSON can carry, environment variable names.
func (c *Config) validatePlugins(v *desired.Validator) {
	names := map[string]string{}
	for i, p := range c.Plugins {
		pp := fmt.Sprintf("plugins[%d]", i)
		switch {
		case p.Name == "":
			v.Add(pp+".name", "required")
		case !pluginName.MatchString(p.Name):
			v.Add(pp+".name", "%q must be a lower-case letter followed by up to 39 lower-case letters, digits or '-'", p.Name)
		default:
			if prev, dup := names[p.Name]; dup {
				v.Add(pp+".name", "duplicate plugin name %q (also %s)", p.Name, prev)
			} else {
				names[p.Name] = pp
			}
		}
		c.validatePluginPath(v, pp+".path", p.Path)
		switch {
		case p.SHA256 == "":
			v.Add(pp+".sha256", "required: the SHA-256 pin of the binary (the first column of sha256sum %s)", p.Resolve(c.PluginDir))
		case !sha256Hex.MatchString(p.SHA256):
			v.Add(pp+".sha256", "%q is not 64 hexadecimal digits (the first column of sha256sum)", p.SHA256)
		}
		if _, err := p.ConfigJSON(); err != nil {
			v.Add(pp+".config", "not representable as JSON: %v", err)
		}
		seen := map[string]bool{}
		for j, e := range p.Env {
			ep := fmt.Sprintf("%s.env[%d]", pp, j)
			switch {
			case !envName.MatchString(e):
				v.Add(ep, "%q is not an environment variable name", e)
			case e == "PATH":
				v.Add(ep, "PATH is always passed; remove it")
			case strings.HasPrefix(e, "PLUGIN_") || strings.HasPrefix(e, "OVSPLANE_PLUGIN"):
				v.Add(ep, "%q is reserved for the plugin handshake", e)
			case seen[e]:
				v.Add(ep, "duplicate variable %q", e)
			}
			seen[e] = true
		}
		validateJobs(v, pp, p)
	}
}

// validateJobs checks a plugin entry's jobs: at most limits.MaxJobsPerPlugin, each with a
// unique name, a type name and a config JSON can carry (limits.CheckJob); whether the plugin
// serves the type is known only once it runs (the job is then in error, saying so).
func validateJobs(v *desired.Validator, pp string, p model.Plugin) {
	if len(p.Jobs) > limits.MaxJobsPerPlugin {
		v.Add(pp+".jobs", "plugin %q has %d jobs, more than %d (limits.MaxJobsPerPlugin); split the work into fewer jobs", p.Name, len(p.Jobs), limits.MaxJobsPerPlugin)
		return
	}
	names := map[string]int{}
	for j, job := range p.Jobs {
		jp := fmt.Sprintf("%s.jobs[%d]", pp, j)
		conf, err := job.ConfigJSON()
		if err != nil {
			v.Add(jp+".config", "plugin %q, job %q: not representable as JSON: %v", p.Name, job.Name, err)
			continue
		}
		if err := limits.CheckJob(job.Name, job.Type, conf); err != nil {
			v.Add(jp, "plugin %q: %v", p.Name, err)
			continue
		}
		if prev, dup := names[job.Name]; dup {
			v.Add(jp+".name", "plugin %q: job %q is also %s.jobs[%d]; job names are unique per plugin", p.Name, job.Name, pp, prev)
		}
		names[job.Name] = j
	}
}

func (c *Config) validatePluginPath(v *desired.Validator, path, p string) {
	switch {
	case p == "":
		v.Add(path, "required: the binary, relative to plugin_dir (%s) or absolute inside it", c.PluginDir)
		return
	case strings.ContainsRune(p, 0):
		v.Add(path, "%q contains a NUL byte", p)
		return
	}
	if filepath.IsAbs(p) {
		if !c.inPluginDir(p) {
			v.Add(path, "%q is not inside plugin_dir (%s); install the binary there", p, c.PluginDir)
		}
		return
	}
	if clean := filepath.Clean(p); clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		v.Add(path, "%q leaves plugin_dir (%s); name a file inside it", p, c.PluginDir)
	}
}

// inPluginDir reports whether the absolute path p names something strictly below PluginDir.
func (c *Config) inPluginDir(p string) bool {
	if !filepath.IsAbs(c.PluginDir) {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(c.PluginDir), filepath.Clean(p))
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}
