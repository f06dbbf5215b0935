package vdpaplugin

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Config is the plugin's configuration, the JSON object the daemon hands to Configure (the
// `config:` of the plugin's entry in ovsplaned's configuration). Every field is optional.
type Config struct {
	// Root is the machine's root directory, below which the plugin reads and writes sys/,
	// dev/ and proc/ (default "/"). Netlink (vdpa, devlink) always talks to the running kernel.
	Root string `json:"root,omitempty"`
	// Simulate, when set, is the absolute path of a vdpa fixture file (vdpa/testdata/*.fixture
	// or one captured by examples/vdpa/capture-fixture.sh): the plugin then runs against an
	// in-memory simulated kernel built from it and touches no hardware at all. For tests only.
	Simulate string `json:"simulate,omitempty"`
	// HWOffload contributes Open_vSwitch other_config:hw-offload=true (default true), which
	// offloading the representors' flows needs; ovs-vswitchd reads it at start only.
	HWOffload *bool `json:"hw_offload,omitempty"`
}

// DefaultRoot is Config.Root's default.
const DefaultRoot = "/"

// hwOffload returns HWOffload with its default.
func (c Config) hwOffload() bool { return c.HWOffload == nil || *c.HWOffload }

// sameMachine reports whether c and o name the same machine (so an open kernel can be kept).
func (c Config) sameMachine(o Config) bool { return c.Root == o.Root && c.Simulate == o.Simulate }

// parseConfig decodes and validates a configuration, filling defaults; errors are *api.Error
// InvalidArgument with one Problem per field ("config.<field>").
func parseConfig(raw []byte) (Config, error) {
	var c Config
	if err := sdk.DecodeConfig(raw, &c); err != nil {
		return Config{}, err
	}
	if c.Root == "" {
		c.Root = DefaultRoot
	}
	var problems []api.Problem
	if !filepath.IsAbs(c.Root) {
		problems = append(problems, api.Problem{Field: "config.root", Message: fmt.Sprintf("%q must be an absolute path", c.Root)})
	} else if fi, err := os.Stat(c.Root); err != nil || !fi.IsDir() {
		problems = append(problems, api.Problem{Field: "config.root", Message: fmt.Sprintf("%q is not a directory", c.Root)})
	}
	if c.Simulate != "" {
		if !filepath.IsAbs(c.Simulate) {
			problems = append(problems, api.Problem{Field: "config.simulate",
				Message: fmt.Sprintf("%q must be an absolute path to a vdpa fixture file", c.Simulate)})
		}
		if c.Root != DefaultRoot {
			problems = append(problems, api.Problem{Field: "config.root", Message: "root and simulate exclude each other: a simulation has its own root"})
		}
	}
	if len(problems) > 0 {
		return Config{}, sdk.Invalid(problems...)
	}
	c.Root = filepath.Clean(c.Root)
	return c, nil
}

// configSchema is the JSON schema of Config.
const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "vdpa plugin configuration",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "root": {"type": "string", "default": "/",
      "description": "root directory holding sys/, dev/ and proc/ (netlink always talks to the running kernel)"},
    "simulate": {"type": "string",
      "description": "SIMULATION, for tests: absolute path of a vdpa fixture file run in an in-memory simulated kernel; no hardware is touched"},
    "hw_offload": {"type": "boolean", "default": true,
      "description": "contribute Open_vSwitch other_config:hw-offload=true (ovs-vswitchd restart required when it changes)"}
  }
}`

// configDoc documents Config for humans.
const configDoc = `root (default "/"): the directory holding sys/, dev/ and proc/; netlink (vdpa, devlink)
always talks to the running kernel. simulate: SIMULATION MODE, for tests on machines without mlx5
NICs: the absolute path of a vdpa fixture file (e.g. vdpa/testdata/cx6dx-switchdev.fixture); the
plugin then provisions an in-memory simulated kernel built from it, touches no hardware, and says so in
its log, health and every port status. hw_offload (default true): contribute Open_vSwitch
other_config:hw-offload=true, which the representors' flow offload needs (read by ovs-vswitchd at
start only).`
