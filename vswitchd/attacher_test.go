package vswitchd

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

func pluginPortSpec(name, typ string) model.Port {
	return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: typ}}}
}

// TestAttacherOneRegistry: the ports of both origins live in one registry, keyed by name. A
// reload of the configuration never displaces an API port's attachment, replays cover both
// origins in name order, and removing an API port leaves the configuration's entries alone.
func TestAttacherOneRegistry(t *testing.T) {
	a := newAttacher(nil, slog.New(slog.DiscardHandler))
	apiPP := &pluginPort{Plugin: "thing", Type: "thing"}
	a.register("b-api", "br0", pluginPortSpec("b-api", "thing"), apiPP)

	cfg := &config.Config{Bridges: []model.Bridge{{Name: "br1", Ports: []model.Port{
		pluginPortSpec("a-cfg", "thing"), pluginPortSpec("b-api", "thing"), {Name: "plain", Interfaces: []model.Interface{{Name: "plain"}}}}}}}
	if gone := a.syncConfig(cfg.Desired()); len(gone) != 0 {
		t.Fatalf("syncConfig of a new configuration: gone %v, want none", gone)
	}
	if got := a.pluginOf("b-api"); got != apiPP {
		t.Fatalf("an API port's attachment was displaced by the configuration's port of the same name: %+v", got)
	}
	if _, ok := a.ports["plain"]; ok {
		t.Fatalf("an ordinary port was registered as a plugin's")
	}
	if reqs := a.replayRequests("thing"); len(reqs) != 1 || reqs[0].Name != "b-api" {
		t.Fatalf("replay before the configuration port is attached: %+v, want b-api only", reqs)
	}

	// The configuration's port is attached (as adoptConfig or attachConfig do).
	cfgPP := &pluginPort{Plugin: "thing", Type: "thing", State: []byte("s")}
	a.ports["a-cfg"].pp = cfgPP
	reqs := a.replayRequests("thing")
	if len(reqs) != 2 || reqs[0].Name != "a-cfg" || reqs[1].Name != "b-api" || string(reqs[0].State) != "s" {
		t.Fatalf("replay of both origins: %+v, want a-cfg (state s) then b-api", reqs)
	}
	if objs := a.apiObjects("thing"); len(objs) != 1 || objs[0].Name != "b-api" {
		t.Fatalf("apiObjects: %+v, want the API port only", objs)
	}

	if pp := a.unregister("a-cfg"); pp != nil || a.pluginOf("a-cfg") != cfgPP {
		t.Fatalf("unregister (API ports only) removed a configuration port")
	}
	if pp := a.unregister("b-api"); pp != apiPP || a.pluginOf("b-api") != nil {
		t.Fatalf("unregister of the API port: %+v", pp)
	}

	// The configuration drops its port: it is returned for detaching.
	if gone := a.syncConfig(config.DesiredState{}); len(gone) != 1 || gone[0].spec.Name != "a-cfg" || gone[0].pp != cfgPP {
		t.Fatalf("syncConfig dropping a-cfg: gone %+v", gone)
	}
	if len(a.ports) != 0 {
		t.Fatalf("registry not empty: %v", a.ports)
	}
}

// TestAttacherAttachingCounts: an ApplyPort between Attach and the end of its write is counted
// (so the orphan sweep leaves its host work alone) until its end runs, however many overlap.
func TestAttacherAttachingCounts(t *testing.T) {
	a := newAttacher(nil, slog.New(slog.DiscardHandler))
	end1, end2 := a.begin("p"), a.begin("p")
	end1()
	if a.attaching["p"] != 1 {
		t.Fatalf("after one of two ends: %d in progress, want 1", a.attaching["p"])
	}
	end2()
	if _, ok := a.attaching["p"]; ok {
		t.Fatalf("after both ends the port is still counted: %v", a.attaching)
	}
}

// TestAttacherReservesObjectRows: the rows of an object of several rows are reserved from its
// claim to the end of its write, so another object being attached at the same time cannot
// take one of them; once the first object's write is over (its ApplyPort's end), they are free.
func TestAttacherReservesObjectRows(t *testing.T) {
	a := newAttacher(nil, slog.New(slog.DiscardHandler))
	object := func(name string) *pluginPort {
		return &pluginPort{Plugin: "p", Shape: model.Port{Name: name, Interfaces: []model.Interface{{Name: name}}},
			More: []placedPort{{Bridge: "br0", Port: model.Port{Name: "shared", Interfaces: []model.Interface{{Name: "shared"}}}}}}
	}
	end := a.begin("o1")
	if err := a.claim("br0", "o1", object("o1")); err != nil {
		t.Fatal(err)
	}
	err := a.claim("br0", "o2", object("o2"))
	if !errors.Is(err, model.ErrConflict) || !strings.Contains(err.Error(), `"o1", being attached`) || !strings.Contains(err.Error(), "/shared") {
		t.Fatalf("a second object claiming a reserved row: %v", err)
	}
	if err := a.claim("br0", "o1", object("o1")); err != nil {
		t.Errorf("the same object claiming again: %v", err)
	}
	end()
	if err := a.claim("br0", "o2", object("o2")); err != nil {
		t.Errorf("after the first object's end: %v", err)
	}
}
