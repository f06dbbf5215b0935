// Command factsplugin is a plugin that records the Open vSwitch facts it is configured with:
// every Configure appends one JSON line {"pid": <pid>, "facts": <api.HostFacts>} to
// ./configured.jsonl (its working directory is its data dir). It provides no types. The
// facts tests of plugins/host and test/integration run it as a real process.
package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Record is one line of configured.jsonl.
type Record struct {
	PID   int           `json:"pid"`
	Facts api.HostFacts `json:"facts"`
}

type factsPlugin struct {
	name string
	mu   sync.Mutex
}

func (p *factsPlugin) Info(context.Context) (api.Info, error) {
	return api.Info{Name: p.name, Version: "0.0.1"}, nil
}

func (p *factsPlugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{}, nil
}

func (p *factsPlugin) Configure(_ context.Context, req api.ConfigureRequest) error {
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
	return nil
}

func (p *factsPlugin) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

func main() {
	sdk.Serve(&factsPlugin{name: filepath.Base(os.Args[0])})
}
