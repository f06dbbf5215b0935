// Command factsplugin is a plugin that records the Open vSwitch facts it is configured with:
// every Configure appends one JSON line {"pid": <pid>, "facts": <api.HostFacts>} to
// ./configured.jsonl (its working directory is its data dir). It provides no types. The
// facts tests of plugins/host and test/integration run it as a real process.
//
// It contributes global config from its configuration (a JSON object, "{}" contributes
// nothing):
//
//	{"contribute": {"vhost-async-support": "true"}, "dpdk_extra": ["--no-telemetry"],
//	 "count_key": "facts-configures"}
//
// contribute and dpdk_extra as given; count_key, when set, is an other_config key whose value
// is the number of Configure calls this process had: a contribution that changes with every
// Configure (the worst case for the host's Configure → Contribute → write loop).
package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Record is one line of configured.jsonl.
type Record struct {
	PID   int           `json:"pid"`
	Facts api.HostFacts `json:"facts"`
}

// config is the plugin's configuration (see the package comment).
type config struct {
	Contribute map[string]string `json:"contribute"`
	DPDKExtra  []string          `json:"dpdk_extra"`
	CountKey   string            `json:"count_key"`
}

type factsPlugin struct {
	name       string
	mu         sync.Mutex
	cfg        config
	configures int
}

func (p *factsPlugin) Info(context.Context) (api.Info, error) {
	return api.Info{Name: p.name, Version: "0.0.1"}, nil
}

func (p *factsPlugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{}, nil
}

func (p *factsPlugin) Configure(_ context.Context, req api.ConfigureRequest) error {
	var c config
	if err := json.Unmarshal(req.Config, &c); err != nil {
		return api.Errorf(api.InvalidArgument, "config: %v", err)
	}
	line, err := json.Marshal(Record{PID: os.Getpid(), Facts: req.Facts})
	if err != nil {
		return api.Errorf(api.Internal, "encoding the facts: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile("configured.jsonl", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return api.Errorf(api.Internal, "recording the facts: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return api.Errorf(api.Internal, "recording the facts: %v", err)
	}
	p.cfg = c
	p.configures++
	return nil
}

// Contribute returns the configured contribution (see the package comment).
func (p *factsPlugin) Contribute(context.Context) (api.GlobalConfig, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := api.GlobalConfig{OtherConfig: map[string]string{}, DPDKExtra: p.cfg.DPDKExtra}
	for k, v := range p.cfg.Contribute {
		g.OtherConfig[k] = v
	}
	if p.cfg.CountKey != "" {
		g.OtherConfig[p.cfg.CountKey] = strconv.Itoa(p.configures)
	}
	return g, nil
}

func (p *factsPlugin) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

func main() {
	sdk.Serve(&factsPlugin{name: filepath.Base(os.Args[0])})
}
