// Package noop is the plugin of command noopplugin, kept apart from its main so the benchmarks
// can also serve it in-process (plugins/sdk/sdktest) and call it directly: port type "noop",
// whose Attach does no host work and returns the OVS shape of a plain internal port. It costs
// only what the plugin system itself costs, which is what the benchmarks measure.
package noop

import (
	"context"
	"log/slog"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Name is the plugin's name, and PortType its one port type.
const (
	Name     = "noop"
	PortType = "noop"
)

// state is what Attach stores in the host: a few bytes, as a real plugin's would be.
type state struct {
	V int `json:"v"`
}

// config is the plugin's configuration: none (DecodeConfig refuses unknown fields).
type config struct{}

// Plugin is the noop plugin. It serves the base service and the port provider capability; its
// methods are safe for concurrent use.
type Plugin struct {
	log *slog.Logger

	mu    sync.Mutex
	ports map[string]api.OwnedPort // by bridge/name: what List reports
}

// New returns the plugin, logging to log.
func New(log *slog.Logger) *Plugin {
	return &Plugin{log: log, ports: map[string]api.OwnedPort{}}
}

// Info implements api.Plugin.
func (p *Plugin) Info(context.Context) (api.Info, error) {
	schema, err := sdk.OptionsSchema(struct{}{})
	if err != nil {
		return api.Info{}, err
	}
	return api.Info{
		Name:        Name,
		Version:     "1.0.0",
		Description: "benchmark plugin: ports of type noop are plain internal ports, no host work",
		Types: []api.ObjectType{{Name: PortType, Kind: api.ObjectKindPort, OptionsSchema: schema,
			Doc: "an internal port; the plugin does nothing"}},
	}, nil
}

// ConfigSchema implements api.Plugin: the plugin takes no configuration.
func (p *Plugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{JSONSchema: `{"type":"object","additionalProperties":false}`, Doc: "no settings"}, nil
}

// Configure implements api.Plugin: only an empty configuration is valid.
func (p *Plugin) Configure(_ context.Context, req api.ConfigureRequest) error {
	var c config
	return sdk.DecodeConfig(req.Config, &c)
}

// Health implements api.Plugin: always OK.
func (p *Plugin) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

// Validate implements api.PortProvider: every request is valid.
func (p *Plugin) Validate(context.Context, api.PortRequest) ([]api.Problem, error) {
	return nil, nil
}

// Attach implements api.PortProvider: one port named like the request with one internal
// interface of the same name, and a few bytes of state. Idempotent; remembers the port for List.
func (p *Plugin) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	st, err := sdk.EncodeState(state{V: 1})
	if err != nil {
		return api.Attachment{}, err
	}
	p.mu.Lock()
	p.ports[req.Bridge+"/"+req.Name] = api.OwnedPort{Bridge: req.Bridge, Name: req.Name, Type: req.Type, State: st, Status: "noop"}
	p.mu.Unlock()
	return api.Attachment{Ports: []api.OVSPort{sdk.SinglePort(req.Name, "internal", nil)}, State: st, Status: "noop"}, nil
}

// Detach implements api.PortProvider: it forgets the port. Idempotent.
func (p *Plugin) Detach(_ context.Context, req api.PortRequest) error {
	p.mu.Lock()
	delete(p.ports, req.Bridge+"/"+req.Name)
	p.mu.Unlock()
	return nil
}

// List implements api.PortProvider: the ports attached and not detached since the process
// started.
func (p *Plugin) List(context.Context) ([]api.OwnedPort, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]api.OwnedPort, 0, len(p.ports))
	for _, op := range p.ports {
		out = append(out, op)
	}
	return out, nil
}
