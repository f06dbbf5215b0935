package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// Bounds of the kit's configuration.
const (
	maxConfigBytes = 64 << 10
	maxArgs        = 64
	maxArgBytes    = 4096
	maxCommands    = 32
	maxScenarios   = 8
	maxSizes       = 16
	maxMeasure     = 8
	minFrame       = 64
	maxFrame       = 9216
)

// Defaults of Config.
const (
	defaultDurationS     = 30
	defaultWarmupS       = 5
	defaultReadyTimeoutS = 120
	defaultThreshold     = 128
	defaultDevDSA        = "/dev/dsa"
)

// defaultSizes is the matrix of frame sizes, in bytes.
func defaultSizes() []int { return []int{64, 128, 256, 512, 1024, 1518, 9000} }

// Config is the kit's input (JSON, at most 64 KiB, unknown fields rejected). Every command is an
// argv: a program and its arguments, run without a shell; shells are refused as programs.
type Config struct {
	// Host describes the machine in the report's heading (CPU, DSA devices, OVS and DPDK build).
	Host string `json:"host"`
	// Vsctl is the ovs-vsctl argv prefix, e.g. ["ovs-vsctl"] or
	// ["ovs-vsctl", "--db=unix:/run/openvswitch/db.sock"]. Required.
	Vsctl []string `json:"vsctl"`
	// Appctl is the ovs-appctl argv prefix, e.g. ["ovs-appctl"] or ["ovs-appctl", "-t", CTL].
	// Required.
	Appctl []string `json:"appctl"`
	// Restart restarts ovs-vswitchd, e.g. ["systemctl", "restart", "openvswitch-switch"]:
	// other_config:vhost-async-support is read only at start. Required.
	Restart []string `json:"restart"`
	// ReadyTimeoutS bounds the wait for ovs-vswitchd to answer after Restart (default 120).
	ReadyTimeoutS int `json:"readyTimeoutS"`
	// DevDSA is where the idxd user work queues' character devices are (default /dev/dsa);
	// DSA "on" requires at least one wq* entry there.
	DevDSA string `json:"devDsa"`
	// Threshold is the vhost async copy threshold in bytes set with
	// netdev-dpdk/set-vhost-async-thresh in DSA "on" (default 128, the branch's default).
	Threshold int `json:"threshold"`
	// Sizes are the frame sizes in bytes (default 64 128 256 512 1024 1518 9000).
	Sizes []int `json:"sizes"`
	// WarmupS is how long traffic runs before the measured window (default 5).
	WarmupS int `json:"warmupS"`
	// DurationS is the measured window per size and mode (default 30).
	DurationS int `json:"durationS"`
	// Scenarios are the topologies, each measured with DSA off and on. Required.
	Scenarios []Scenario `json:"scenarios"`
}

// Scenario is one topology of the matrix, e.g. "PVP" or "VM-to-VM same node".
type Scenario struct {
	// Name labels the scenario's rows.
	Name string `json:"name"`
	// Setup runs after each ovs-vswitchd restart, in order: start or reconnect the VMs, start
	// the forwarding application in the guests (e.g. testpmd io forwarding for PVP).
	Setup [][]string `json:"setup"`
	// Traffic runs once per frame size and must generate traffic for {seconds} seconds with
	// frames of {size} bytes, then exit 0: a TRex, pktgen or guest testpmd txonly wrapper. The
	// placeholders {size} and {seconds} are replaced inside any argument; {size} is required.
	Traffic []string `json:"traffic"`
	// Measure names the OVS interfaces whose tx_packets and tx_bytes count the traffic that
	// made it through (PVP: the physical port back to the generator; VM-to-VM: the receiving
	// VM's vhost-user port). Their sum over the window gives Mpps and Gbit/s.
	Measure []string `json:"measure"`
	// Teardown runs after the last size of each mode (stop guest applications, VMs).
	Teardown [][]string `json:"teardown"`
}

// LoadConfig reads, decodes and validates a Config from r, filling in defaults.
func LoadConfig(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("dsakit: read config: %w", err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("dsakit: config longer than %d bytes", maxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("dsakit: config: %w", err)
	}
	if err := c.normalize(); err != nil {
		return nil, err
	}
	return &c, nil
}

// normalize fills in defaults and checks every bound, naming the field at fault.
func (c *Config) normalize() error {
	if c.ReadyTimeoutS == 0 {
		c.ReadyTimeoutS = defaultReadyTimeoutS
	}
	if c.DevDSA == "" {
		c.DevDSA = defaultDevDSA
	}
	if c.Threshold == 0 {
		c.Threshold = defaultThreshold
	}
	if len(c.Sizes) == 0 {
		c.Sizes = defaultSizes()
	}
	if c.WarmupS == 0 {
		c.WarmupS = defaultWarmupS
	}
	if c.DurationS == 0 {
		c.DurationS = defaultDurationS
	}
	switch {
	case len(c.Host) > 200:
		return fmt.Errorf("dsakit: config host: %d bytes, at most 200", len(c.Host))
	case c.ReadyTimeoutS < 1 || c.ReadyTimeoutS > 600:
		return fmt.Errorf("dsakit: config readyTimeoutS %d: want 1..600", c.ReadyTimeoutS)
	case !path.IsAbs(c.DevDSA):
		return fmt.Errorf("dsakit: config devDsa %q: want an absolute path", c.DevDSA)
	case c.Threshold < 1 || c.Threshold > 65536:
		return fmt.Errorf("dsakit: config threshold %d: want 1..65536 bytes", c.Threshold)
	case c.WarmupS < 1 || c.WarmupS > 300:
		return fmt.Errorf("dsakit: config warmupS %d: want 1..300", c.WarmupS)
	case c.DurationS < 5 || c.DurationS > 600:
		return fmt.Errorf("dsakit: config durationS %d: want 5..600", c.DurationS)
	case len(c.Sizes) > maxSizes:
		return fmt.Errorf("dsakit: config sizes: %d, at most %d", len(c.Sizes), maxSizes)
	case len(c.Scenarios) == 0 || len(c.Scenarios) > maxScenarios:
		return fmt.Errorf("dsakit: config scenarios: %d, want 1..%d", len(c.Scenarios), maxScenarios)
	}
	for _, s := range c.Sizes {
		if s < minFrame || s > maxFrame {
			return fmt.Errorf("dsakit: config sizes: %d: want %d..%d bytes", s, minFrame, maxFrame)
		}
	}
	for field, argv := range map[string][]string{"vsctl": c.Vsctl, "appctl": c.Appctl, "restart": c.Restart} {
		if err := checkArgv(field, argv); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, s := range c.Scenarios {
		where := fmt.Sprintf("scenarios[%d]", i)
		if s.Name == "" || len(s.Name) > 64 || strings.ContainsAny(s.Name, "|\n") {
			return fmt.Errorf("dsakit: config %s name %q: want 1-64 bytes without '|' or newlines", where, s.Name)
		}
		if seen[s.Name] {
			return fmt.Errorf("dsakit: config %s name %q: used twice", where, s.Name)
		}
		seen[s.Name] = true
		if err := checkArgv(where+".traffic", s.Traffic); err != nil {
			return err
		}
		if !slices.ContainsFunc(s.Traffic, func(a string) bool { return strings.Contains(a, "{size}") }) {
			return fmt.Errorf("dsakit: config %s.traffic: no {size} placeholder: the generator would send one size for every row", where)
		}
		if len(s.Measure) == 0 || len(s.Measure) > maxMeasure {
			return fmt.Errorf("dsakit: config %s.measure: %d interfaces, want 1..%d", where, len(s.Measure), maxMeasure)
		}
		for _, m := range s.Measure {
			if m == "" || len(m) > 64 {
				return fmt.Errorf("dsakit: config %s.measure %q: want an OVS interface name", where, m)
			}
		}
		for _, list := range []struct {
			name string
			cmds [][]string
		}{{"setup", s.Setup}, {"teardown", s.Teardown}} {
			if len(list.cmds) > maxCommands {
				return fmt.Errorf("dsakit: config %s.%s: %d commands, at most %d", where, list.name, len(list.cmds), maxCommands)
			}
			for j, argv := range list.cmds {
				if err := checkArgv(fmt.Sprintf("%s.%s[%d]", where, list.name, j), argv); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// shells are the programs the kit refuses to run: every command is an argv, never a script
// string handed to a shell.
func shells() []string {
	return []string{"sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "busybox"}
}

// checkArgv checks one configured command.
func checkArgv(field string, argv []string) error {
	if len(argv) == 0 || len(argv) > maxArgs {
		return fmt.Errorf("dsakit: config %s: %d arguments, want a program and at most %d arguments", field, len(argv), maxArgs-1)
	}
	if argv[0] == "" || slices.Contains(shells(), path.Base(argv[0])) {
		return fmt.Errorf("dsakit: config %s: program %q: name a program, not a shell (commands run without one)", field, argv[0])
	}
	for _, a := range argv {
		if len(a) > maxArgBytes || strings.ContainsRune(a, 0) {
			return fmt.Errorf("dsakit: config %s: argument %.40q: at most %d bytes, no NUL", field, a, maxArgBytes)
		}
	}
	return nil
}
