package config

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
)

const pin = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestPluginsLoad(t *testing.T) {
	c := mustLoad(t, `plugin_dir: /opt/p
plugins:
  - name: vdpa
    path: sub/vdpa
    sha256: `+pin+`
    config:
      Netns: Blue
      mtu: 1500
      ratio: 0.5
      big: 1e3
      on: true
      mask: "0x10"
      hex: 0x10
      when: 2001-12-14
      none: null
      list: [1, two, {k: 3}]
    env: [HTTPS_PROXY]
  - name: dsa
    path: /opt/p/dsa
    sha256: `+strings.ToUpper(pin)+`
`, nil)
	if len(c.Plugins) != 2 {
		t.Fatalf("plugins: %+v", c.Plugins)
	}
	want := map[string]any{
		"Netns": "Blue", "mtu": int64(1500), "ratio": 0.5, "big": int64(1000), "on": true,
		"mask": "0x10", "hex": int64(16), "when": "2001-12-14", "none": nil,
		"list": []any{int64(1), "two", map[string]any{"k": int64(3)}},
	}
	if got := c.Plugins[0].Config; !reflect.DeepEqual(got, want) {
		t.Errorf("config:\n got %#v\nwant %#v", got, want)
	}
	js, err := c.Plugins[0].ConfigJSON()
	if err != nil || !strings.Contains(string(js), `"mtu":1500`) || !strings.Contains(string(js), `"mask":"0x10"`) {
		t.Errorf("ConfigJSON: %s, %v", js, err)
	}
	if js, _ := c.Plugins[1].ConfigJSON(); string(js) != "{}" {
		t.Errorf("empty ConfigJSON: %s", js)
	}
	if got := c.Plugins[0].Resolve(c.PluginDir); got != "/opt/p/sub/vdpa" {
		t.Errorf("Resolve relative: %s", got)
	}
	if got := c.Plugins[1].Resolve(c.PluginDir); got != "/opt/p/dsa" {
		t.Errorf("Resolve absolute: %s", got)
	}
	if !reflect.DeepEqual(c.Plugins[0].Env, []string{"HTTPS_PROXY"}) || c.Plugins[1].Env != nil {
		t.Errorf("env: %q %q", c.Plugins[0].Env, c.Plugins[1].Env)
	}
}

func TestPluginsValidate(t *testing.T) {
	good := model.Plugin{Name: "vdpa", Path: "vdpa", SHA256: pin}
	tests := []struct {
		name   string
		change func(p *model.Plugin)
		want   []string
	}{
		{"ok", func(*model.Plugin) {}, nil},
		{"no name", func(p *model.Plugin) { p.Name = "" }, []string{"plugins[1].name: required"}},
		{"bad name", func(p *model.Plugin) { p.Name = "Vdpa" }, []string{
			`plugins[1].name: "Vdpa" must be a lower-case letter followed by up to 39 lower-case letters, digits or '-'`}},
		{"duplicate name", func(p *model.Plugin) { p.Name = "first" }, []string{
			`plugins[1].name: duplicate plugin name "first" (also plugins[0])`}},
		{"no path", func(p *model.Plugin) { p.Path = "" }, []string{
			"plugins[1].path: required: the binary, relative to plugin_dir (/var/lib/ovsplane/plugins) or absolute inside it"}},
		{"path escapes", func(p *model.Plugin) { p.Path = "a/../../x" }, []string{
			`plugins[1].path: "a/../../x" leaves plugin_dir (/var/lib/ovsplane/plugins); name a file inside it`}},
		{"path is the dir", func(p *model.Plugin) { p.Path = "." }, []string{
			`plugins[1].path: "." leaves plugin_dir (/var/lib/ovsplane/plugins); name a file inside it`}},
		{"absolute outside", func(p *model.Plugin) { p.Path = "/usr/bin/vdpa" }, []string{
			`plugins[1].path: "/usr/bin/vdpa" is not inside plugin_dir (/var/lib/ovsplane/plugins); install the binary there`}},
		{"absolute sibling", func(p *model.Plugin) { p.Path = "/var/lib/ovsplane/plugins2/x" }, []string{
			`plugins[1].path: "/var/lib/ovsplane/plugins2/x" is not inside plugin_dir (/var/lib/ovsplane/plugins); install the binary there`}},
		{"absolute inside", func(p *model.Plugin) { p.Path = "/var/lib/ovsplane/plugins/x/../vdpa" }, nil},
		{"no pin", func(p *model.Plugin) { p.SHA256 = "" }, []string{
			"plugins[1].sha256: required: the SHA-256 pin of the binary (the first column of sha256sum /var/lib/ovsplane/plugins/vdpa)"}},
		{"bad pin", func(p *model.Plugin) { p.SHA256 = "abc" }, []string{
			`plugins[1].sha256: "abc" is not 64 hexadecimal digits (the first column of sha256sum)`}},
		{"config not JSON", func(p *model.Plugin) { p.Config = map[string]any{"f": func() {}} }, []string{
			"plugins[1].config: not representable as JSON: json: unsupported type: func()"}},
		{"env", func(p *model.Plugin) { p.Env = []string{"A-B", "PATH", "PLUGIN_X", "HOME", "HOME"} }, []string{
			`plugins[1].env[0]: "A-B" is not an environment variable name`,
			"plugins[1].env[1]: PATH is always passed; remove it",
			`plugins[1].env[2]: "PLUGIN_X" is reserved for the plugin handshake`,
			`plugins[1].env[4]: duplicate variable "HOME"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			p := good
			tt.change(&p)
			c.Plugins = []model.Plugin{{Name: "first", Path: "first", SHA256: pin}, p}
			if got := messages(c.Validate()); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPluginsLoadErrors(t *testing.T) {
	tests := map[string]string{
		"plugins:\n  - {name: a, path: a, sha256: " + pin + ", config: {x: .nan}}\n": "line 2: plugins[0].config.x: .nan is not a JSON number (quote it for a string)",
		"plugins:\n  - {name: a, path: a, sha256: " + pin + ", confg: {}}\n":         "plugins[0].confg: unknown key",
		"plugins:\n  - {name: a, path: a, sha256: " + pin + ", config: [1]}\n":       "line 2: plugins[0].config: must be a mapping of keys to values",
		"plugins:\n  - {name: a, path: a, sha256: " + pin + ", env: HOME}\n":         "",
		"plugins:\n  - {name: a, path: a, sha256: " + pin + ", env: [HOME, [X]]}\n":  "plugins[0].env[1]: expected type 'string', got unconvertible type '[]interface {}'",
	}
	for doc, want := range tests {
		_, err := Load(context.Background(), Options{Data: []byte(doc)})
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", doc, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q: no error", doc)
			continue
		}
		if got := problems(err); len(got) != 1 || got[0] != want {
			t.Errorf("%q:\n got %q\nwant %q", doc, got, want)
		}
	}
}

// messages lists the messages of Validate's joined error (none for nil).
func messages(err error) []string {
	var out []string
	for _, e := range desired.Flatten(err) {
		out = append(out, e.Error())
	}
	return out
}
