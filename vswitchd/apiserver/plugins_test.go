package apiserver_test

import (
	"testing"

	"connectrpc.com/connect"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

func TestListPlugins(t *testing.T) {
	d := startDaemon(t, config.API{Listen: []string{"unix:SOCK"}})
	c := dial(t, d.addrs[0])
	t.Run("none", func(t *testing.T) {
		resp, err := c.ListPlugins(t.Context(), connect.NewRequest(&v1.ListPluginsRequest{}))
		if err != nil || len(resp.Msg.GetPlugins()) != 0 {
			t.Fatalf("ListPlugins = %v, %v; want none", resp, err)
		}
	})
	d.fake.SetPlugins([]model.PluginInfo{
		{Name: "veth", Version: "0.3.0", State: "running", Types: []string{"veth"},
			Capabilities: []string{"port_provider", "watcher"}, Restarts: 1, LastError: "exit status 2", PID: 77},
		{Name: "dsa", State: "refused", Reason: "sha256 mismatch"},
	})
	t.Run("sorted with every field", func(t *testing.T) {
		resp, err := c.ListPlugins(t.Context(), connect.NewRequest(&v1.ListPluginsRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		ps := resp.Msg.GetPlugins()
		if len(ps) != 2 || ps[0].GetName() != "dsa" || ps[1].GetName() != "veth" {
			t.Fatalf("plugins = %v", ps)
		}
		if ps[0].GetState() != v1.PluginState_PLUGIN_STATE_REFUSED || ps[0].GetReason() != "sha256 mismatch" {
			t.Errorf("dsa = %v", ps[0])
		}
		v := ps[1]
		if v.GetState() != v1.PluginState_PLUGIN_STATE_RUNNING || v.GetVersion() != "0.3.0" || v.GetTypes()[0] != "veth" ||
			len(v.GetCapabilities()) != 2 || v.GetRestarts() != 1 || v.GetLastError() != "exit status 2" || v.GetPid() != 77 {
			t.Errorf("veth = %v", v)
		}
	})
	t.Run("JSON as in docs/api.md", func(t *testing.T) {
		code, m, raw := postJSON(t, d.sock, "ListPlugins", `{}`)
		ps, _ := m["plugins"].([]any)
		if code != 200 || len(ps) != 2 {
			t.Fatalf("HTTP %d %s", code, raw)
		}
		if veth, _ := ps[1].(map[string]any); veth["state"] != "PLUGIN_STATE_RUNNING" || veth["lastError"] != "exit status 2" {
			t.Errorf("veth in JSON = %v", veth)
		}
	})
}
