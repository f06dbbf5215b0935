package sdk

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// Base is embedded in a plugin type to supply the methods a simple plugin has nothing to say
// in. With it a port type needs three methods of its own, Info, Validate and Attach:
//
//	type plugin struct{ sdk.Base }
//
//	func (p *plugin) Info(ctx context.Context) (api.Info, error)                          { … }
//	func (p *plugin) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) { … }
//	func (p *plugin) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error)  { … }
//
//	func main() { sdk.Serve(&plugin{}) }
//
// A method the plugin declares itself replaces Base's. What Base answers, and when that is wrong:
//
//   - ConfigSchema: no configuration. Configure accepts an empty configuration ("{}", or none
//     configured) and refuses any field with InvalidArgument naming it. Embed
//     BaseWithConfig[T] instead to take a configuration.
//   - Health: HealthOK, always. Write Health when the plugin depends on something that can
//     fail (a device, a helper process).
//   - Detach: nil. Right when Attach does no host work, only computes the OVS shape: the host
//     removes the OVS rows itself. A plugin whose Attach creates something (a link, a device, a
//     file) writes Detach to remove it.
//   - List: nothing owned. The host calls List each time the plugin has started, after the
//     replay of its ports, and detaches every port listed that OVSDB does not hold: host work
//     of an Attach whose port was never written because the daemon or the plugin died in
//     between. Listing nothing means no such sweep ever happens, which is honest only for a
//     plugin whose Attach does no host work. A plugin that does host work lists it from the
//     host (its marks in the kernel, sysfs, files in HostFacts.DataDir), not from memory: a
//     restarted plugin remembers nothing, and a restart is when List matters.
//
// Configured returns what the last successful Configure received (facts of the running Open
// vSwitch, cookie and group ranges, the data directory). Base is safe for concurrent use and
// its zero value is ready; do not copy it after first use.
type Base struct {
	mu         sync.RWMutex
	req        api.ConfigureRequest
	configured bool
}

// ConfigSchema returns an empty schema: the plugin takes no configuration.
func (b *Base) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{Doc: "This plugin takes no configuration."}, nil
}

// Configure refuses any configuration field (InvalidArgument naming it) and keeps the request
// for Configured.
func (b *Base) Configure(_ context.Context, req api.ConfigureRequest) error {
	var none struct{}
	if err := DecodeConfig(req.Config, &none); err != nil {
		return err
	}
	b.keep(req)
	return nil
}

func (b *Base) keep(req api.ConfigureRequest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.req, b.configured = req, true
}

// Configured returns the request of the last successful Configure, and false before the first.
func (b *Base) Configured() (api.ConfigureRequest, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.req, b.configured
}

// Health reports HealthOK.
func (b *Base) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

// Detach does nothing and returns nil: Attach did no host work to undo.
func (b *Base) Detach(context.Context, api.PortRequest) error { return nil }

// List returns no port: the plugin holds no host work the host could find orphaned.
func (b *Base) List(context.Context) ([]api.OwnedPort, error) { return nil, nil }

// BaseWithConfig is Base for a plugin with a configuration of type T, a struct decoded from
// the configuration's JSON object with DecodeConfig (strict: unknown fields are refused, the
// problems naming them as "config.FIELD"). Set Defaults, Schema and Check before serving:
//
//	type config struct {
//		MTU int `json:"mtu"`
//	}
//	type plugin struct{ sdk.BaseWithConfig[config] }
//
//	p := &plugin{}
//	p.Defaults = config{MTU: 1500}
//	… p.Config().MTU …
//
// Configure starts each time from a deep copy of Defaults (through JSON: only the exported
// fields), so fields the operator leaves out keep their defaults and a reload that removes a
// field brings its default back. A refused configuration leaves the previous one in place.
type BaseWithConfig[T any] struct {
	Base
	// Defaults is the configuration before decoding.
	Defaults T
	// Schema is what ConfigSchema returns: the JSON schema of T and a doc for humans.
	Schema api.ConfigSchema
	// Check, when set, judges a decoded configuration: problems refuse it with
	// InvalidArgument (name fields as "config.FIELD").
	Check func(T) []api.Problem

	cfg *T // guarded by Base.mu
}

// ConfigSchema returns Schema.
func (b *BaseWithConfig[T]) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return b.Schema, nil
}

// Configure decodes the configuration over a copy of Defaults, checks it with Check and makes
// it the current one; on error the previous configuration stays.
func (b *BaseWithConfig[T]) Configure(_ context.Context, req api.ConfigureRequest) error {
	cfg, err := b.fresh()
	if err != nil {
		return err
	}
	if err := DecodeConfig(req.Config, &cfg); err != nil {
		return err
	}
	if b.Check != nil {
		if problems := b.Check(cfg); len(problems) > 0 {
			return Invalid(problems...)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.req, b.configured, b.cfg = req, true, &cfg
	return nil
}

// fresh returns a deep copy of Defaults.
func (b *BaseWithConfig[T]) fresh() (T, error) {
	var cfg T
	data, err := json.Marshal(b.Defaults)
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err != nil {
		return cfg, api.Errorf(api.Internal, "sdk: copy the configuration defaults: %w", err)
	}
	return cfg, nil
}

// Config returns the current configuration: Defaults before the first successful Configure.
// The value is shared: treat its maps and slices as read-only.
func (b *BaseWithConfig[T]) Config() T {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.cfg == nil {
		return b.Defaults
	}
	return *b.cfg
}
