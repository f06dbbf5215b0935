package host

import (
	"reflect"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

func TestStatusInfo(t *testing.T) {
	st := Status{Name: "sample", Version: "1.2.0", State: StateRunning, Reason: "r", Restarts: 2, LastError: "boom", PID: 42,
		Types:        []api.ObjectType{{Name: "veth"}, {Name: "vdpa"}},
		Capabilities: []api.Capability{api.CapabilityFlowProgram}}
	want := model.PluginInfo{Name: "sample", Version: "1.2.0", State: string(StateRunning), Reason: "r", Restarts: 2,
		LastError: "boom", PID: 42, Types: []string{"veth", "vdpa"}, Capabilities: []string{api.CapabilityFlowProgram.String()}}
	if got := st.Info(); !reflect.DeepEqual(got, want) {
		t.Errorf("Info() = %+v, want %+v", got, want)
	}
}
