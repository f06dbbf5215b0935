package sdk_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// three is a port type written with the three methods Base leaves: Info, Validate, Attach.
type three struct{ sdk.Base }

func (*three) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "three", Version: "1.0.0", Types: []api.ObjectType{{Name: "three", Kind: api.ObjectKindPort}}}, nil
}

func (*three) Validate(context.Context, api.PortRequest) ([]api.Problem, error) { return nil, nil }

func (*three) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	return api.Attachment{Ports: []api.OVSPort{sdk.SinglePort(req.Name, "internal", nil)}}, nil
}

// TestBaseThreeMethods: a type with Info, Validate and Attach over Base is a port provider
// served through the real shims, with no configuration, health OK, Detach nil and List empty.
func TestBaseThreeMethods(t *testing.T) {
	p := &three{}
	h := sdktest.NewFakeHost(t, p)
	if !reflect.DeepEqual(h.Conn().Info.Capabilities, []api.Capability{api.CapabilityPortProvider}) {
		t.Fatalf("capabilities %v, want port_provider only", h.Conn().Info.Capabilities)
	}
	if _, ok := p.Configured(); ok {
		t.Fatal("Configured before Configure")
	}
	err := h.Configure([]byte(`{"mtu": 9000}`))
	if problems, _ := sdk.ProblemsOf(err); api.CodeOf(err) != api.InvalidArgument || len(problems) != 1 || problems[0].Field != "config.mtu" {
		t.Fatalf("Configure with a field: %v, want invalid_argument naming config.mtu", err)
	}
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	if req, ok := p.Configured(); !ok || req.Facts.OVSVersion != h.Facts.OVSVersion || req.Cookies != h.Cookies {
		t.Fatalf("Configured() = %+v, %v: want the host's request", req, ok)
	}
	if health, err := h.Health(); err != nil || health.State != api.HealthOK {
		t.Fatalf("Health = %+v, %v", health, err)
	}
	if _, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "p0", Type: "three"}); err != nil {
		t.Fatal(err)
	}
	if owned, err := h.List(); err != nil || len(owned) != 0 {
		t.Fatalf("List = %v, %v: want nothing", owned, err)
	}
	if err := h.Detach("br0", "p0"); err != nil {
		t.Fatal(err)
	}
}

type conf struct {
	MTU   int               `json:"mtu"`
	Extra map[string]string `json:"extra"`
	Tags  []string          `json:"tags"`
}

// configured is a plugin with a configuration and no capability: Info is its only method.
type configured struct{ sdk.BaseWithConfig[conf] }

func (*configured) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "configured", Version: "1.0.0"}, nil
}

// TestBaseWithConfig: the configuration is decoded over the defaults, which no decoding
// changes; a refused configuration (unknown field, Check) keeps the previous one.
func TestBaseWithConfig(t *testing.T) {
	p := &configured{}
	p.Defaults = conf{MTU: 1500, Extra: map[string]string{"a": "1"}, Tags: []string{"x"}}
	p.Schema = api.ConfigSchema{JSONSchema: `{"type":"object"}`, Doc: "mtu"}
	p.Check = func(c conf) []api.Problem {
		if c.MTU < 68 {
			return []api.Problem{{Field: "config.mtu", Message: "at least 68"}}
		}
		return nil
	}
	h := sdktest.NewFakeHost(t, p)
	if got := p.Config(); got.MTU != 1500 {
		t.Fatalf("Config before Configure = %+v, want the defaults", got)
	}
	if err := h.Configure([]byte(`{"mtu": 9000, "extra": {"b": "2"}, "tags": ["y"]}`)); err != nil {
		t.Fatal(err)
	}
	want := conf{MTU: 9000, Extra: map[string]string{"a": "1", "b": "2"}, Tags: []string{"y"}}
	if got := p.Config(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Config = %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(p.Defaults, conf{MTU: 1500, Extra: map[string]string{"a": "1"}, Tags: []string{"x"}}) {
		t.Fatalf("decoding changed the defaults: %+v", p.Defaults)
	}
	for _, bad := range []string{`{"mtu": 10}`, `{"speed": 1}`} {
		if err := h.Configure([]byte(bad)); api.CodeOf(err) != api.InvalidArgument || !strings.Contains(err.Error(), "config.") {
			t.Errorf("Configure(%s) = %v, want invalid_argument naming the field", bad, err)
		}
		if got := p.Config(); !reflect.DeepEqual(got, want) {
			t.Errorf("after refusing %s: Config = %+v, want the previous %+v", bad, got, want)
		}
	}
	if err := h.Configure([]byte(`{}`)); err != nil || p.Config().MTU != 1500 {
		t.Fatalf("a reload without mtu: %v, mtu %d, want the default back", err, p.Config().MTU)
	}
	schema, err := h.Conn().Plugin.ConfigSchema(t.Context())
	if err != nil || schema != p.Schema {
		t.Fatalf("ConfigSchema = %+v, %v", schema, err)
	}
}
