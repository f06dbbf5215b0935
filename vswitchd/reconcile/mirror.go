package reconcile

import (
	"fmt"
	"reflect"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// Mirror statuses. Each mirror of a desired bridge gets a status of kind mirror named
// "BRIDGE/MIRROR": ready when OVSDB holds an owned mirror with exactly the desired selection
// and output (its ports resolved on the bridge); pending until then (a port it names does not
// exist yet, say); error when the bridge already has a mirror of that name someone else
// created (the daemon never changes or unlinks it) or the bridge is in error.

// mirrorStatuses returns the statuses of b's mirrors; have is what OVSDB holds for b, by mirror
// name; bridgeErr the bridge's error (if its status is an error).
func mirrorStatuses(b model.Bridge, have map[string]ovsdb.MirrorHave, bridgeErr string) []model.Status {
	var out []model.Status
	for _, m := range b.Mirrors {
		s := model.Status{Kind: model.KindMirror, Name: b.Name + "/" + m.Name, Bridge: b.Name, State: model.StatePending}
		got, ok := have[m.Name]
		switch {
		case ok && !got.Owned:
			s.State, s.Error = model.StateError, fmt.Sprintf(
				"bridge %q already has a mirror %q ovsplane did not create; ovsplane leaves it alone: remove it (ovs-vsctl -- --id=@m get Mirror %s -- remove Bridge %s mirrors @m) or rename the desired mirror",
				b.Name, m.Name, m.Name, b.Name)
		case bridgeErr != "":
			s.State, s.Error = model.StateError, "its bridge is in error: "+bridgeErr
		case ok && reflect.DeepEqual(m.Canonical(), got.Mirror):
			s.State = model.StateReady
		}
		out = append(out, s)
	}
	return out
}

// bridgeMirrors reads what OVSDB holds for every bridge's mirrors, when the client can tell.
func (r *Reconciler) bridgeMirrors() map[string]map[string]ovsdb.MirrorHave {
	if bm, ok := r.c.(interface {
		BridgeMirrors() map[string]map[string]ovsdb.MirrorHave
	}); ok {
		return bm.BridgeMirrors()
	}
	return nil
}
