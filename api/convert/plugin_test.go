package convert_test

import (
	"reflect"
	"testing"

	"github.com/ovsplane/ovsplane/api/convert"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

func TestPluginInfo(t *testing.T) {
	t.Run("round trip of every state", func(t *testing.T) {
		for _, state := range []string{"starting", "running", "restarting", "failed", "refused", "stopped"} {
			p := model.PluginInfo{Name: "veth", Version: "1.2.0", State: state, Reason: "why",
				Types: []string{"veth"}, Capabilities: []string{"port_provider", "watcher"},
				Restarts: 3, LastError: "exit status 2", PID: 4242}
			m := convert.PluginInfoToProto(p)
			if m.State == v1.PluginState_PLUGIN_STATE_UNSPECIFIED {
				t.Errorf("%s: state not mapped", state)
			}
			if got := convert.PluginInfoFromProto(m); !reflect.DeepEqual(got, p) {
				t.Errorf("%s: round trip:\n got %+v\nwant %+v", state, got, p)
			}
		}
	})
	t.Run("unknown state", func(t *testing.T) {
		m := convert.PluginInfoToProto(model.PluginInfo{Name: "x", State: "hibernating"})
		if m.State != v1.PluginState_PLUGIN_STATE_UNSPECIFIED {
			t.Errorf("state = %v, want unspecified", m.State)
		}
		if got := convert.PluginInfoFromProto(m).State; got != "unknown" {
			t.Errorf("back: state = %q, want unknown", got)
		}
		if got := convert.PluginStateName(v1.PluginState(99)); got != "unknown" {
			t.Errorf("name of 99 = %q", got)
		}
	})
	t.Run("list keeps order and is never nil", func(t *testing.T) {
		if got := convert.PluginsToProto(nil); got == nil || len(got) != 0 {
			t.Errorf("PluginsToProto(nil) = %#v", got)
		}
		got := convert.PluginsToProto([]model.PluginInfo{{Name: "b"}, {Name: "a"}})
		if got[0].Name != "b" || got[1].Name != "a" {
			t.Errorf("order: %v", got)
		}
	})
}
