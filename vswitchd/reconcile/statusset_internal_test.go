package reconcile

import (
	"slices"
	"testing"

	"github.com/ovsplane/ovsplane/model"
)

// TestStatusSetSettleAndChanges: a refresh's statuses, put in any order with an object put
// twice, settle into kind-then-name order with the last put kept; lookups by key find them
// (a mirror's name holds a slash); the changes between two sets are the new, the changed and
// the removed statuses (the last with an empty State).
func TestStatusSetSettleAndChanges(t *testing.T) {
	next := statusSet{
		{Kind: model.KindPort, Name: "p2", Bridge: "br0", State: model.StatePending},
		{Kind: model.KindInterface, Name: "p1", Bridge: "br0", State: model.StateReady, Ofport: 1},
		{Kind: model.KindMirror, Name: "br0/m", Bridge: "br0", State: model.StateReady},
		{Kind: model.KindPort, Name: "p1", Bridge: "br0", State: model.StatePending},
		{Kind: model.KindPort, Name: "p1", Bridge: "br0", State: model.StateReady}, // put last: wins
		{Kind: model.KindBridge, Name: "br0", State: model.StateReady},
	}.settle()
	var keys []string
	for _, s := range next {
		keys = append(keys, s.Key())
	}
	if want := []string{"bridge/br0", "interface/p1", "mirror/br0/m", "port/p1", "port/p2"}; !slices.Equal(keys, want) {
		t.Fatalf("settled keys %v, want %v", keys, want)
	}
	if s, ok := next.get("port/p1"); !ok || s.State != model.StateReady {
		t.Errorf("port/p1 = %+v, %v; want the last put (ready)", s, ok)
	}
	if s, ok := next.get("mirror/br0/m"); !ok || s.Name != "br0/m" {
		t.Errorf("mirror/br0/m = %+v, %v", s, ok)
	}
	for _, key := range []string{"port/p3", "nokind", "interface/br0"} {
		if s, ok := next.get(key); ok {
			t.Errorf("%s found: %+v", key, s)
		}
	}

	old := statusSet{
		{Kind: model.KindBridge, Name: "br0", State: model.StateReady},
		{Kind: model.KindInterface, Name: "gone", Bridge: "br0", State: model.StateReady, Ofport: 7},
		{Kind: model.KindInterface, Name: "p1", Bridge: "br0", State: model.StatePending},
		{Kind: model.KindPort, Name: "p2", Bridge: "br0", State: model.StatePending},
	}.settle()
	got := changes(old, next)
	want := []model.Status{
		{Kind: model.KindInterface, Name: "gone", Bridge: "br0"},
		{Kind: model.KindInterface, Name: "p1", Bridge: "br0", State: model.StateReady, Ofport: 1},
		{Kind: model.KindMirror, Name: "br0/m", Bridge: "br0", State: model.StateReady},
		{Kind: model.KindPort, Name: "p1", Bridge: "br0", State: model.StateReady},
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n got %+v\nwant %+v", got, want)
	}
	if c := changes(next, next); len(c) != 0 {
		t.Errorf("changes of a set with itself: %+v", c)
	}
}
