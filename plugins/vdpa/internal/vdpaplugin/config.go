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
	// DPDKVDPA is the absolute path of DPDK's dpdk-vdpa program (DefaultDPDKVDPA), which the
	// plugin runs and supervises for each port in mode dpdk-pmd. Set, it is checked at
	// Configure; left to its default, when a dpdk-pmd port is attached.
	DPDKVDPA string `json:"dpdk_vdpa,omitempty"`
	// SuperviseDPDKVDPA (default true) runs dpdk-vdpa as each dpdk-pmd port's data-path job;
	// false leaves it to the operator (a service manager): the port's status and endpoints
	// then give the command line to run.
	SuperviseDPDKVDPA *bool `json:"supervise_dpdk_vdpa,omitempty"`
}

// DefaultDPDKVDPA is Config.DPDKVDPA's default: where DPDK's examples/vdpa application lands
// when built from source and installed by hand (distributions do not package it).
const DefaultDPDKVDPA = "/usr/local/bin/dpdk-vdpa"

// supervise returns SuperviseDPDKVDPA with its default.
func (c Config) supervise() bool { return c.SuperviseDPDKVDPA == nil || *c.SuperviseDPDKVDPA }

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
	switch {
	case c.DPDKVDPA == "":
		c.DPDKVDPA = DefaultDPDKVDPA
	case !filepath.IsAbs(c.DPDKVDPA) || filepath.Clean(c.DPDKVDPA) != c.DPDKVDPA:
		problems = append(problems, api.Problem{Field: "config.dpdk_vdpa", Message: fmt.Sprintf("%q must be a clean absolute path to the dpdk-vdpa program", c.DPDKVDPA)})
	default:
		if err := sdk.CheckProgram(c.DPDKVDPA); err != nil {
			problems = append(problems, api.Problem{Field: "config.dpdk_vdpa", Message: messageOf(err) + ": install DPDK's examples/vdpa application there, or give its path"})
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
      "description": "contribute Open_vSwitch other_config:hw-offload=true (ovs-vswitchd restart required when it changes)"},
    "dpdk_vdpa": {"type": "string", "default": "/usr/local/bin/dpdk-vdpa",
      "description": "absolute path of DPDK's dpdk-vdpa program, run and supervised for each dpdk-pmd port"},
    "supervise_dpdk_vdpa": {"type": "boolean", "default": true,
      "description": "run dpdk-vdpa as each dpdk-pmd port's data-path job; false: the port's status gives the command to run yourself"}
  }
}`

// configDoc documents Config for humans.
const configDoc = `root (default "/"): the directory holding sys/, dev/ and proc/; netlink (vdpa, devlink)
always talks to the running kernel. simulate: SIMULATION MODE, for tests on machines without mlx5
NICs: the absolute path of a vdpa fixture file (e.g. vdpa/testdata/cx6dx-switchdev.fixture); the
plugin then provisions an in-memory simulated kernel built from it, touches no hardware, and says so in
its log, health and every port status. hw_offload (default true): contribute Open_vSwitch
other_config:hw-offload=true, which the representors' flow offload needs (read by ovs-vswitchd at
start only). dpdk_vdpa (default /usr/local/bin/dpdk-vdpa): DPDK's vDPA driver program, which the
plugin runs for every port in mode dpdk-pmd as the port's data-path job (type dpdk-vdpa, named
dpdk-vdpa-<port>): restarted when it exits, stopped with the port, its output in the plugin's log,
its stats in vsctl plugin stats vdpa. supervise_dpdk_vdpa (default true): false leaves running it
to you; the port's status then gives the command.`
