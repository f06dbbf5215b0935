package config

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

var (
	pluginName     = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
	envName        = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sha256Hex      = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	pluginConfigAt = regexp.MustCompile(`^plugins\[\d+\]\.config$`)
)

// isPluginConfig reports whether path is a plugin's free-form config map.
func isPluginConfig(path string) bool { return pluginConfigAt.MatchString(path) }

// maxExactInt is the largest integer a JSON number (a float64 for most readers) holds exactly.
const maxExactInt = 1 << 53

// pluginConfigScalar decodes a scalar of a plugin's config with its YAML type, normalised to
// what survives JSON and a YAML round trip: integers as int64, integral floats within ±2^53 as
// int64, other finite floats as float64, timestamps as their text, strings, booleans.
func pluginConfigScalar(n *yaml.Node, path string) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("line %d: %s: %w", n.Line, path, err)
	}
	switch x := v.(type) {
	case string, bool, nil, int64:
		return x, nil
	case int:
		return int64(x), nil
	case uint64:
		return normaliseFloat(float64(x), n, path)
	case float64:
		return normaliseFloat(x, n, path)
	case time.Time:
		return n.Value, nil
	}
	return nil, fmt.Errorf("line %d: %s: unsupported value %q", n.Line, path, n.Value)
}

func normaliseFloat(f float64, n *yaml.Node, path string) (any, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return nil, fmt.Errorf("line %d: %s: %s is not a JSON number (quote it for a string)", n.Line, path, n.Value)
	case f == math.Trunc(f) && math.Abs(f) <= maxExactInt:
		return int64(f), nil
	}
	return f, nil
}

// validatePlugins checks the plugin list: names, paths inside the plugin dir, pins, a config
// JSON can carry, environment variable names.
func (c *Config) validatePlugins(v *validator) {
	names := map[string]string{}
	for i, p := range c.Plugins {
		pp := fmt.Sprintf("plugins[%d]", i)
		switch {
		case p.Name == "":
			v.add(pp+".name", "required")
		case !pluginName.MatchString(p.Name):
			v.add(pp+".name", "%q must be a lower-case letter followed by up to 39 lower-case letters, digits or '-'", p.Name)
		default:
			if prev, dup := names[p.Name]; dup {
				v.add(pp+".name", "duplicate plugin name %q (also %s)", p.Name, prev)
			} else {
				names[p.Name] = pp
			}
		}
		c.validatePluginPath(v, pp+".path", p.Path)
		switch {
		case p.SHA256 == "":
			v.add(pp+".sha256", "required: the SHA-256 pin of the binary (the first column of sha256sum %s)", p.Resolve(c.PluginDir))
		case !sha256Hex.MatchString(p.SHA256):
			v.add(pp+".sha256", "%q is not 64 hexadecimal digits (the first column of sha256sum)", p.SHA256)
		}
		if _, err := p.ConfigJSON(); err != nil {
			v.add(pp+".config", "not representable as JSON: %v", err)
		}
		seen := map[string]bool{}
		for j, e := range p.Env {
			ep := fmt.Sprintf("%s.env[%d]", pp, j)
			switch {
			case !envName.MatchString(e):
				v.add(ep, "%q is not an environment variable name", e)
			case e == "PATH":
				v.add(ep, "PATH is always passed; remove it")
			case strings.HasPrefix(e, "PLUGIN_") || strings.HasPrefix(e, "OVSPLANE_PLUGIN"):
				v.add(ep, "%q is reserved for the plugin handshake", e)
			case seen[e]:
				v.add(ep, "duplicate variable %q", e)
			}
			seen[e] = true
		}
	}
}

func (c *Config) validatePluginPath(v *validator, path, p string) {
	switch {
	case p == "":
		v.add(path, "required: the binary, relative to plugin_dir (%s) or absolute inside it", c.PluginDir)
		return
	case strings.ContainsRune(p, 0):
		v.add(path, "%q contains a NUL byte", p)
		return
	}
	if filepath.IsAbs(p) {
		if !c.inPluginDir(p) {
			v.add(path, "%q is not inside plugin_dir (%s); install the binary there", p, c.PluginDir)
		}
		return
	}
	if clean := filepath.Clean(p); clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		v.add(path, "%q leaves plugin_dir (%s); name a file inside it", p, c.PluginDir)
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
