package reconcile

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
)

// TestConflictTracker: repairs of one column of one object become a conflict at the
// threshold within the window (not before, not when spread wider than the window), every
// further repair is reported while it lasts, other columns and objects are tracked apart, and
// the conflict ends — reported once, status cleared — a window after its last repair.
func TestConflictTracker(t *testing.T) {
	var got []Conflict
	cs := newConflicts(Options{ConflictRepairs: 3, ConflictWindow: time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnConflict: func(c Conflict) { got = append(got, c) }})
	t0 := time.Date(2026, 12, 5, 17, 0, 0, 0, time.UTC)
	dp := foreignWrite{kind: model.KindBridge, name: "br-int", column: "datapath_type", theirs: "system", ours: "netdev"}
	fm := foreignWrite{kind: model.KindBridge, name: "br-int", column: "fail_mode", theirs: "standalone", ours: "secure"}

	// Spread wider than the window: never a conflict.
	for i := range 5 {
		cs.repaired(t0.Add(time.Duration(i)*45*time.Second), []foreignWrite{dp})
	}
	if len(got) != 0 || cs.snapshot() != nil {
		t.Fatalf("repairs 45 s apart with a 1 min window made a conflict: %+v %v", got, cs.snapshot())
	}
	// Three within the window: a conflict at the third.
	t1 := t0.Add(time.Hour)
	cs.repaired(t1, []foreignWrite{dp, fm})
	cs.repaired(t1.Add(10*time.Second), []foreignWrite{dp})
	if len(got) != 0 {
		t.Fatalf("conflict after two repairs: %+v", got)
	}
	cs.repaired(t1.Add(20*time.Second), []foreignWrite{dp})
	if len(got) != 1 || !got[0].Active || got[0].Repairs != 3 || !got[0].First.Equal(t1) || got[0].Column != "datapath_type" ||
		got[0].Theirs != "system" || got[0].Ours != "netdev" || got[0].Key() != "bridge/br-int" {
		t.Fatalf("after three repairs: %+v", got)
	}
	snap := cs.snapshot()
	msg := snap["bridge/br-int"]
	for _, want := range []string{`keeps setting bridge "br-int" datapath_type to "system"`, `repaired it to "netdev" 3 times`,
		"os-vif", "[ovs] datapath_type = netdev", "openvswitch_agent.ini"} {
		if !strings.Contains(msg, want) {
			t.Errorf("status message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "fail_mode") {
		t.Errorf("fail_mode, repaired once, is in the conflict: %q", msg)
	}
	cs.repaired(t1.Add(50*time.Second), []foreignWrite{dp})
	if len(got) != 2 || got[1].Repairs != 4 || !got[1].First.Equal(t1) {
		t.Fatalf("a repair during the conflict: %+v", got)
	}
	// A pass with nothing repaired, less than a window after the last: still on.
	cs.repaired(t1.Add(100*time.Second), nil)
	if cs.snapshot()["bridge/br-int"] == "" || len(got) != 2 {
		t.Fatalf("conflict ended early: %+v", got)
	}
	// A window after the last repair: over, reported once.
	cs.repaired(t1.Add(111*time.Second), nil)
	cs.repaired(t1.Add(200*time.Second), nil)
	if len(got) != 3 || got[2].Active || cs.snapshot() != nil {
		t.Fatalf("conflict not ended once: %+v %v", got, cs.snapshot())
	}
	// A long value is cut.
	long := dp
	long.theirs = strings.Repeat("x", 500)
	for i := range 3 {
		cs.repaired(t1.Add(time.Hour+time.Duration(i)*time.Second), []foreignWrite{long})
	}
	if c := got[len(got)-1]; len(c.Theirs) > maxConflictValue+len("…") {
		t.Errorf("their value kept at %d bytes", len(c.Theirs))
	}
}
