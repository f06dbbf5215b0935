package reconcile

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// Defaults of the foreign-writer conflict detection (Options.ConflictRepairs, ConflictWindow).
const (
	// DefaultConflictRepairs is how many repairs of one column of one object within
	// DefaultConflictWindow make a conflict.
	DefaultConflictRepairs = 3
	// DefaultConflictWindow is the window of DefaultConflictRepairs, and how long after the
	// last repair a conflict stays reported.
	DefaultConflictWindow = 10 * time.Minute
	// maxConflictValue bounds the other writer's value quoted in a status, log or metric.
	maxConflictValue = 64
)

// Conflict is another OVSDB writer changing, again and again, a column of an object ovsplaned
// owns: the reconciler repaired the same column of the same object at least
// Options.ConflictRepairs times within Options.ConflictWindow, each time from the value Theirs
// back to Ours. The reconciler keeps repairing (see the package documentation); the conflict is
// reported in the object's status, logged and passed to Options.OnConflict until a whole
// window passes without a repair.
type Conflict struct {
	Kind   model.Kind // model.KindBridge
	Name   string     // the object's name
	Column string     // the OVSDB column: "datapath_type", "fail_mode" or "protocols"
	// Theirs is the value the other writer sets (at most 64 bytes, cut with "…"); a set
	// column's members are sorted and joined with commas.
	Theirs string
	Ours   string // the value ovsplaned repairs it to
	// Repairs counts the repairs within the window; First and Last are the first and the
	// latest of them.
	Repairs     int
	First, Last time.Time
	// Active is true while the conflict lasts, false in the one OnConflict call that reports
	// its end.
	Active bool
}

// Key is the status key of the object in conflict ("bridge/NAME").
func (c Conflict) Key() string { return string(c.Kind) + "/" + c.Name }

// Message is the conflict as a status error: what happens, who probably does it and the fix.
func (c Conflict) Message() string {
	msg := fmt.Sprintf("conflict: another OVSDB writer keeps setting %s %q %s to %q (ovsplaned repaired it to %q %d times since %s)",
		c.Kind, c.Name, c.Column, c.Theirs, c.Ours, c.Repairs, c.First.UTC().Format(time.RFC3339))
	if c.Kind == model.KindBridge && c.Column == "datapath_type" && c.Theirs == "system" && c.Ours != "" {
		// os-vif's OVS plugin writes the port profile's datapath_type ("system" when the
		// profile has none) onto the bridge at every plug (ovsdbapp add_br may_exist).
		return msg + fmt.Sprintf(`; each change moves every port of the bridge to another datapath. `+
			`OpenStack's os-vif does this when Nova plugs a VIF whose port binding carries no datapath_type (os-vif then writes "system"): `+
			`make Neutron bind ports with datapath_type %q (ML2/OVS: [ovs] datapath_type = %s in openvswitch_agent.ini on this host), `+
			`or take the bridge out of ovsplaned's configuration and leave it to the platform`, c.Ours, c.Ours)
	}
	if c.Kind == model.KindBridge && (c.Column == "fail_mode" || c.Column == "protocols") {
		// Neutron's OVS agent sets both on the bridges it programs (br-int and the bridges of
		// its bridge_mappings).
		return msg + fmt.Sprintf(`; OpenStack's Neutron OVS agent sets fail_mode and protocols on br-int and on the bridges of its bridge_mappings: `+
			`give the bridge the same %s in ovsplaned's configuration (%q here is what the other writer wants), `+
			`or take the bridge out of ovsplaned's configuration and leave it to the agent`, c.Column, c.Theirs)
	}
	return msg + fmt.Sprintf("; find the writer (ovsdb-server's log, or `ovsdb-client monitor Open_vSwitch %s %s`) and make it set %q, "+
		"or take the object out of ovsplaned's configuration", tableOf(c.Kind), c.Column, c.Ours)
}

// tableOf is the OVSDB table of a kind of object.
func tableOf(k model.Kind) string {
	switch k {
	case model.KindPort:
		return "Port"
	case model.KindInterface:
		return "Interface"
	}
	return "Bridge"
}

// bridgeColumns is what the conflict detection needs from the client (*ovsdb.Client has it);
// without it no conflict is detected.
type bridgeColumns interface {
	OwnedBridgeColumns(name string) (map[string]string, bool)
}

// foreignWrite is one owned column found changed by someone else before a drift pass.
type foreignWrite struct {
	kind         model.Kind
	name, column string
	theirs, ours string
}

// flips is the repair history of one column of one object.
type flips struct {
	at     []time.Time // repairs within the window, oldest first, at most the threshold
	last   Conflict
	active bool
}

// conflicts tracks the repairs of owned columns and tells when they become conflicts. Its
// methods are called from the pass only (one at a time); Status reads go through snapshot,
// taken under the Reconciler's mu.
type conflicts struct {
	threshold int
	window    time.Duration
	log       *slog.Logger
	notify    func(Conflict)
	cols      map[string]*flips // kind/name/column → history
}

func newConflicts(opts Options) *conflicts {
	c := &conflicts{threshold: opts.ConflictRepairs, window: opts.ConflictWindow, log: opts.Logger,
		notify: opts.OnConflict, cols: map[string]*flips{}}
	if c.threshold <= 0 {
		c.threshold = DefaultConflictRepairs
	}
	if c.window <= 0 {
		c.window = DefaultConflictWindow
	}
	return c
}

// foreignWrites compares the owned columns of every desired bridge (except left) with the
// client's cache and returns those another writer changed.
func foreignWrites(c Client, desired config.DesiredState, left map[string]string) []foreignWrite {
	bc, ok := c.(bridgeColumns)
	if !ok {
		return nil
	}
	var out []foreignWrite
	for _, b := range desired.Bridges {
		if _, skip := left[b.Name]; skip {
			continue
		}
		cur, owned := bc.OwnedBridgeColumns(b.Name)
		if !owned {
			continue
		}
		protocols := slices.Clone(b.Protocols)
		slices.Sort(protocols)
		for _, col := range []struct{ name, want string }{{"datapath_type", b.DatapathType}, {"fail_mode", b.FailMode},
			{"protocols", strings.Join(protocols, ",")}} {
			if have := cur[col.name]; have != col.want {
				out = append(out, foreignWrite{kind: model.KindBridge, name: b.Name, column: col.name, theirs: have, ours: col.want})
			}
		}
	}
	return out
}

// repaired records that the pass at now repaired each of ws, reports every column that became
// a conflict, and ends the conflicts whose last repair is a window old.
func (cs *conflicts) repaired(now time.Time, ws []foreignWrite) {
	for _, w := range ws {
		key := string(w.kind) + "/" + w.name + "/" + w.column
		f := cs.cols[key]
		if f == nil {
			f = &flips{}
			cs.cols[key] = f
		}
		f.at = append(f.at, now)
		f.at = slices.DeleteFunc(f.at, func(t time.Time) bool { return now.Sub(t) > cs.window })
		if len(f.at) > cs.threshold {
			f.at = f.at[len(f.at)-cs.threshold:]
		}
		theirs := w.theirs
		if len(theirs) > maxConflictValue {
			theirs = theirs[:maxConflictValue] + "…"
		}
		f.last = Conflict{Kind: w.kind, Name: w.name, Column: w.column, Theirs: theirs, Ours: w.ours,
			Repairs: f.last.Repairs + 1, First: f.last.First, Last: now, Active: true}
		if !f.active {
			f.last.Repairs, f.last.First = len(f.at), f.at[0]
		}
		if len(f.at) >= cs.threshold {
			if !f.active {
				cs.log.Error("reconcile: conflict with another OVSDB writer: repairing an owned column again and again",
					"object", f.last.Key(), "column", w.column, "their_value", theirs, "our_value", w.ours,
					"repairs", f.last.Repairs, "fix", f.last.Message())
			}
			f.active = true
			if cs.notify != nil {
				cs.notify(f.last)
			}
		}
	}
	cs.expire(now)
}

// expire ends the conflicts (and forgets the histories) whose last repair is more than a
// window before now.
func (cs *conflicts) expire(now time.Time) {
	for key, f := range cs.cols {
		if now.Sub(f.last.Last) <= cs.window {
			continue
		}
		delete(cs.cols, key)
		if f.active {
			f.last.Active = false
			cs.log.Info("reconcile: conflict over: no foreign write for a whole window",
				"object", f.last.Key(), "column", f.last.Column, "window", cs.window)
			if cs.notify != nil {
				cs.notify(f.last)
			}
		}
	}
}

// snapshot returns, by status key, the message of every active conflict (several columns of
// one object joined).
func (cs *conflicts) snapshot() map[string]string {
	var out map[string]string
	keys := make([]string, 0, len(cs.cols))
	for k := range cs.cols {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f := cs.cols[k]
		if !f.active {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if prev := out[f.last.Key()]; prev != "" {
			out[f.last.Key()] = prev + "; " + f.last.Message()
		} else {
			out[f.last.Key()] = f.last.Message()
		}
	}
	return out
}
