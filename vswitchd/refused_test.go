package vswitchd_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// TestRefusedReplayIsDetached: an answer to a replay that the host's checks or the daemon's
// shape checks refuse is detached with the refused answer's State — once the plugin runs,
// since the host replays before it may be called — and the object is in error saying so; its
// rows stay as stored. An acceptable answer at the next replay clears the error. Re-applying
// the same request, a replay too, whose answer is refused, is detached the same way.
func TestRefusedReplayIsDetached(t *testing.T) {
	e := newEnv(t)
	fp := newFakePlugins()
	d, _ := startDaemon(t, e, cfgWithBridge(), nil, withPlugins(fp))
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", thingPort("t1", nil)); err != nil {
		t.Fatal(err)
	}
	reqs, _ := d.PluginPorts(e.Ctx, "thing-plugin")
	if len(reqs) != 1 || !reqs[0].Replay || string(reqs[0].State) != "st:t1:1" {
		t.Fatalf("replay requests: %+v, want t1 with Replay and its state", reqs)
	}
	good, err := fp.Attach(e.Ctx, reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	badShape := good
	badShape.State = []byte("other-state")
	badShape.Ports = append(badShape.Ports, api.OVSPort{Bridge: "br-nowhere", Name: "t1-b", Interfaces: []api.OVSInterface{{Name: "t1-b"}}})
	for _, c := range []struct {
		name   string
		result api.ReplayResult
		state  string
		why    string
	}{
		{"refused by the host", api.ReplayResult{Request: reqs[0], Err: &api.RefusedAnswerError{Plugin: "thing-plugin", State: []byte("huge-state"),
			Err: &api.Error{Code: api.Internal, Message: "attachment of port br-cfg/t1: state: 4000 bytes, more than 2048", Problems: []api.Problem{{Field: "state"}}}}},
			"huge-state", "more than 2048"},
		{"refused shape", api.ReplayResult{Request: reqs[0], Attachment: badShape}, "other-state", `bridge "br-nowhere"`},
	} {
		fp.detached = nil
		d.PluginReplayed("thing-plugin", []api.ReplayResult{c.result})
		if len(fp.detached) != 0 {
			t.Fatalf("%s: detached before the plugin runs: %q", c.name, fp.detached)
		}
		d.PluginChanged("thing-plugin") // running: the refused replay is detached
		if len(fp.detached) != 1 || fp.detached[0] != "t1 "+c.state {
			t.Errorf("%s: detached %q, want t1 with the refused answer's state %q", c.name, fp.detached, c.state)
		}
		info, err := d.Port("t1")
		if err != nil || info.Status.State != model.StateError || !strings.Contains(info.Status.Error, "refused") || !strings.Contains(info.Status.Error, c.why) {
			t.Errorf("%s: status %+v, %v; want an error saying why", c.name, info.Status, err)
		}
		d.PluginChanged("thing-plugin")
		if len(fp.detached) != 1 {
			t.Errorf("%s: detached again: %q", c.name, fp.detached)
		}
	}
	// An acceptable replay answer clears the error; nothing more is detached.
	fp.detached = nil
	d.PluginReplayed("thing-plugin", []api.ReplayResult{{Request: reqs[0], Attachment: good}})
	d.PluginChanged("thing-plugin")
	if info, _ := d.Port("t1"); info.Status.State == model.StateError || len(fp.detached) != 0 {
		t.Errorf("after a good replay: status %+v, detached %q", info.Status, fp.detached)
	}

	// The same request applied again is a replay: a refused answer is detached at once.
	fp.bad = true
	_, err = d.ApplyPort(e.Ctx, "br-cfg", thingPort("t1", nil))
	fp.bad = false
	if err == nil || len(fp.detached) != 1 || fp.detached[0] != "t1 st:t1:1" {
		t.Errorf("refused re-apply: %v, detached %q", err, fp.detached)
	}
}
