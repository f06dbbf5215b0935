//go:build linux

package watch_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/watch"
)

// A watcher plugin gets a snapshot (redelivered after it failed the first batch), then the
// ports ovs-vsctl and ovsdbapp (as os-vif) add, with ovs-vswitchd's ofport, the daemon's own
// ports classified by owner, a change and a deletion; interfaces on a bridge its filter does
// not name never reach it. The delivery latency of the two foreign writers is logged.
func TestWatcherSeesEveryWriter(t *testing.T) {
	requireOvsdbapp(t)
	r := newRig(t)
	r.db.Vsctl(t, "add-br", "brw", "--", "add-port", "brw", "pre0", "--", "add-br", "bro", "--", "add-port", "bro", "other0")
	r.start(api.WatchFilter{Bridges: []string{"brw", "brown"}}, map[string]any{"fail": 1}, watch.Options{RetryMax: time.Second}, 5*time.Second)
	pid := r.status().PID

	recs := r.records()
	for len(recs) < 2 {
		time.Sleep(10 * time.Millisecond)
		recs = r.records()
	}
	if !recs[0].Failed || !recs[0].Batch.Resync || !recs[1].Batch.Resync || !recs[1].Batch.ResyncDone {
		t.Fatalf("a failed snapshot batch must go again as a snapshot:\n%s", r.dump())
	}
	r.waitView(pid, r.ifacesOn("brw"), nil)

	// ovs-vsctl, waiting for ovs-vswitchd as it does by default.
	start := time.Now()
	r.db.Vsctl(t, "add-port", "brw", "vs1")
	vsctlDone := time.Now()
	rec, ev := r.waitEvent("vs1 added", func(_ record, ev api.PortEvent) bool { return ev.Interface == "vs1" })
	if ev.Kind != api.EventAdded || ev.Owner != api.OwnerForeign || ev.Bridge != "brw" || ev.Port != "vs1" || ev.Type != "" {
		t.Errorf("vs1's first event: %+v", ev)
	}
	recOf, _ := r.waitEvent("vs1 with an ofport", func(_ record, ev api.PortEvent) bool { return ev.Interface == "vs1" && ev.Ofport > 0 })
	t.Logf("LATENCY ovs-vsctl add-port → plugin: %v from the command's start (the command took %v), %v to an event with ofport",
		time.Unix(0, rec.At).Sub(start), vsctlDone.Sub(start), time.Unix(0, recOf.At).Sub(start))

	// ovsdbapp, as os-vif plugs a VIF.
	before, after := r.ovsdbappAddPort("brw", "os1")
	rec, ev = r.waitEvent("os1 added", func(_ record, ev api.PortEvent) bool { return ev.Interface == "os1" })
	if ev.Kind != api.EventAdded || ev.Owner != api.OwnerForeign || ev.Bridge != "brw" || ev.ExternalIDs["iface-id"] != "vm-os1" {
		t.Errorf("os1's first event: %+v", ev)
	}
	recOf, _ = r.waitEvent("os1 with an ofport", func(_ record, ev api.PortEvent) bool { return ev.Interface == "os1" && ev.Ofport > 0 })
	t.Logf("LATENCY ovsdbapp add_port+db_set → plugin: %v from the transaction's start, %v after its commit returned, %v to an event with ofport",
		time.Unix(0, rec.At).Sub(before), time.Unix(0, rec.At).Sub(after), time.Unix(0, recOf.At).Sub(before))

	// The daemon's own rows: a port of its own and a plugin's port, on its own bridge.
	if _, err := r.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "brown"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "brown", Port: model.Port{Name: "own1"}}).
		EnsurePort(ovsdb.PortOn{Bridge: "brown", Port: model.Port{Name: "plg1", ExternalIDs: map[string]string{vswitchd.PluginKey: "veth"}}}).
		Commit(r.ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	_, ev = r.waitEvent("own1", func(_ record, ev api.PortEvent) bool { return ev.Interface == "own1" })
	if ev.Owner != api.OwnerOvsplane || len(ev.ExternalIDs) != 0 {
		t.Errorf("own1: %+v (the host's tags must not be delivered)", ev)
	}
	_, ev = r.waitEvent("plg1", func(_ record, ev api.PortEvent) bool { return ev.Interface == "plg1" })
	if ev.Owner != api.OwnerPlugin || ev.Plugin != "veth" {
		t.Errorf("plg1: %+v", ev)
	}

	r.db.Vsctl(t, "set", "Interface", "vs1", "external_ids:color=blue")
	r.waitEvent("vs1 changed", func(_ record, ev api.PortEvent) bool {
		return ev.Interface == "vs1" && ev.Kind == api.EventChanged && ev.ExternalIDs["color"] == "blue"
	})
	r.db.Vsctl(t, "del-port", "brw", "vs1")
	r.waitEvent("vs1 removed", func(_ record, ev api.PortEvent) bool { return ev.Interface == "vs1" && ev.Kind == api.EventRemoved })
	r.waitView(pid, r.ifacesOn("brw", "brown"), nil)
	for _, rec := range r.records() {
		for _, ev := range rec.Batch.Events {
			if ev.Bridge == "bro" {
				t.Errorf("an interface of bro, which the filter does not name, was delivered: %+v", ev)
			}
		}
	}
	if s := r.stats(); s.Failures != 1 || s.Resyncs != 1 || s.Overflows != 0 {
		t.Errorf("stats %+v", s)
	}
}

// A plugin killed with SIGKILL is restarted by the host and gets a fresh snapshot from its new
// process, which reflects what changed while it was down.
func TestWatcherResyncAfterRestart(t *testing.T) {
	r := newRig(t)
	r.db.Vsctl(t, "add-br", "brw", "--", "add-port", "brw", "a1", "--", "add-port", "brw", "a2")
	r.start(api.WatchFilter{}, nil, watch.Options{RetryMax: time.Second}, 5*time.Second)
	first := r.status().PID
	r.waitView(first, r.ifacesOn("brw"), nil)

	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.db.Vsctl(t, "--no-wait", "del-port", "brw", "a1", "--", "add-port", "brw", "b1")
	deadline := time.Now().Add(30 * time.Second)
	for st := r.status(); st.PID == first || st.State != "running"; st = r.status() {
		if time.Now().After(deadline) {
			t.Fatalf("watchrec not restarted: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	second := r.status().PID
	r.waitView(second, r.ifacesOn("brw"), nil)
	resynced := false
	for _, rec := range r.records() {
		if rec.PID == second && rec.Batch.Resync {
			resynced = true
		}
	}
	if !resynced {
		t.Errorf("the restarted plugin got no Resync batch:\n%s", r.dump())
	}
	if s := r.stats(); s.Resyncs < 2 {
		t.Errorf("stats %+v", s)
	}
}

// What a plugin answers lands in OVSDB through the writer: its key is set and recorded on a
// foreign interface and on one the daemon owns (and the daemon's own write keeps it), a key
// someone else set is neither overwritten nor removed, and the plugin's Remove removes its
// key and the record.
func TestWatcherInterfaceChanges(t *testing.T) {
	r := newRig(t)
	r.db.Vsctl(t, "add-br", "brw", "--", "add-port", "brw", "ch1", "--", "set", "Interface", "ch1", "other_config:theirs=orig",
		"--", "add-port", "brw", "xx1")
	set := map[string]any{"changes": []map[string]any{{"prefix": "ch", "set": map[string]string{"watchrec-mark": "1", "theirs": "mine"},
		"remove": []string{"theirs"}}}}
	r.start(api.WatchFilter{}, set, watch.Options{}, 5*time.Second)
	waitGet := func(table, rec, col, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := r.db.Get(t, table, rec, col); got != want; got = r.db.Get(t, table, rec, col) {
			if time.Now().After(deadline) {
				t.Fatalf("%s %s %s = %s, want %s; stats %+v", table, rec, col, got, want, r.stats())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitGet("Interface", "ch1", "other_config", `{theirs=orig, watchrec-mark="1"}`)
	waitGet("Interface", "ch1", "external_ids", `{ovsplane-other-config-watchrec=watchrec-mark}`)
	if got := r.db.Get(t, "Interface", "xx1", "other_config"); got != "{}" {
		t.Errorf("xx1, which the plugin asked nothing for: other_config %s", got)
	}
	// The plugin sees its own write as a change.
	r.waitEvent("ch1 with the mark", func(_ record, ev api.PortEvent) bool {
		return ev.Interface == "ch1" && ev.OtherConfig["watchrec-mark"] == "1"
	})

	// An interface the daemon owns: the watcher's key lands, and the daemon's next write of
	// the same spec (as a reconciler pass) keeps it.
	spec := ovsdb.PortOn{Bridge: "brown", Port: model.Port{Name: "chown", Interfaces: []model.Interface{{Name: "chown",
		OtherConfig: map[string]string{"spec": "1"}}}}}
	if _, err := r.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "brown"}, nil).EnsurePort(spec).Commit(r.ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// theirs is nobody's here: the plugin takes it (its Remove in the same change loses).
	const chownAll = `{spec="1", theirs=mine, watchrec-mark="1"}`
	waitGet("Interface", "chown", "other_config", chownAll)
	if _, err := r.c.NewTxn(2).EnsurePort(spec).Commit(r.ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := r.db.Get(t, "Interface", "chown", "other_config"); got != chownAll {
		t.Errorf("the daemon's write dropped the watcher's keys: %s", got)
	}

	// Remove: the plugin's own key goes with its record; the foreign key stays.
	r.reconfigure(map[string]any{"changes": []map[string]any{{"prefix": "ch", "remove": []string{"watchrec-mark", "theirs"}}}})
	r.db.Vsctl(t, "set", "Interface", "ch1", "external_ids:poke=1", "--", "set", "Interface", "chown", "external_ids:poke=1") // events, so the plugin answers
	waitGet("Interface", "ch1", "other_config", `{theirs=orig}`)
	waitGet("Interface", "ch1", "external_ids", `{poke="1"}`)
	waitGet("Interface", "chown", "other_config", `{spec="1"}`)
	if s := r.stats(); s.Changes < 2 || s.Ignored < 2 {
		t.Errorf("stats %+v: the foreign key's Set and Remove must be counted as ignored", s)
	}
}

// A plugin that never answers (it blocks in OnPortEvents until the host's call times out)
// while thousands of interface changes happen costs the daemon at most MaxPending pending
// states: the queue collapses to a resync instead of growing. Once the plugin answers again
// it gets a complete, current snapshot.
func TestBlockedWatcherStaysBounded(t *testing.T) {
	const (
		ports      = 150
		rounds     = 12
		maxPending = 32
	)
	r := newRig(t)
	args := []string{"--no-wait", "add-br", "brw"}
	for i := range ports {
		args = append(args, "--", "add-port", "brw", fmt.Sprintf("q%d", i))
	}
	r.db.Vsctl(t, args...)
	r.start(api.WatchFilter{}, map[string]any{"block": true}, watch.Options{MaxPending: maxPending, RetryMax: 300 * time.Millisecond}, time.Second)

	var worst watch.Stats
	sample := func() {
		s := r.stats()
		if s.Pending > worst.Pending {
			worst.Pending = s.Pending
		}
		if s.Pending > maxPending || s.PendingHigh > maxPending {
			t.Fatalf("queue beyond its bound: %+v", s)
		}
	}
	for round := range rounds {
		args := []string{"--no-wait"}
		for i := range ports {
			args = append(args, "--", "set", "Interface", fmt.Sprintf("q%d", i), "external_ids:round="+strconv.Itoa(round))
		}
		r.db.Vsctl(t, args...)
		sample()
		time.Sleep(20 * time.Millisecond)
		sample()
	}
	time.Sleep(200 * time.Millisecond) // let the dispatcher read the last round
	sample()
	s := r.stats()
	t.Logf("after %d interface changes to a plugin that never answers: %+v (interfaces held: %d)", ports*rounds, s, r.disp.Interfaces())
	if s.Overflows == 0 || s.Dropped == 0 || s.Batches != 0 || s.PendingHigh > maxPending {
		t.Errorf("stats %+v: expected overflows and no delivered batch", s)
	}
	if n := r.disp.Interfaces(); n != ports+1 {
		t.Errorf("the dispatcher holds %d interfaces, OVSDB %d", n, ports+1)
	}

	r.reconfigure(map[string]any{})
	pid := r.status().PID
	want := r.ifacesOn("brw")
	r.waitView(pid, want, func(v map[string]api.PortEvent) error {
		for n, ev := range v {
			if strings.HasPrefix(n, "q") && ev.ExternalIDs["round"] != strconv.Itoa(rounds-1) {
				return fmt.Errorf("%s at round %q", n, ev.ExternalIDs["round"])
			}
		}
		return nil
	})
	// The overflows during the first snapshot ask for another one after it: wait until the
	// queue is at rest, then it knows every interface.
	deadline := time.Now().Add(30 * time.Second)
	for s := r.stats(); s.Resyncing || s.Pending > 0 || s.Resyncs < 1 || s.Known != ports+1; s = r.stats() {
		if time.Now().After(deadline) {
			t.Fatalf("after the plugin answered again: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatcherDeliveryLatency measures (it asserts no time) how long a port added by ovs-vsctl
// and one added by ovsdbapp take to reach the watcher plugin, over several ports each, and
// logs min/median/max:
//
//	OVSPLANE_REQUIRE_LAB=1 go test -count=1 -v -run TestWatcherDeliveryLatency ./vswitchd/watch/
//
// ovs-vsctl is timed from just before its process starts (it waits for ovs-vswitchd, as by
// default); ovsdbapp from just before its transaction and from when its commit returned (its
// process start and imports excluded).
func TestWatcherDeliveryLatency(t *testing.T) {
	requireOvsdbapp(t)
	const n = 10
	r := newRig(t)
	r.db.Vsctl(t, "add-br", "brw")
	r.start(api.WatchFilter{Bridges: []string{"brw"}}, nil, watch.Options{}, 5*time.Second)
	r.waitView(r.status().PID, r.ifacesOn("brw"), nil)
	var vsctl, vsctlTook, appStart, appCommit []time.Duration
	for i := range n {
		name := fmt.Sprintf("lv%d", i)
		start := time.Now()
		r.db.Vsctl(t, "add-port", "brw", name)
		vsctlTook = append(vsctlTook, time.Since(start))
		rec, ev := r.waitEvent(name, func(_ record, ev api.PortEvent) bool { return ev.Interface == name })
		if ev.Kind != api.EventAdded || ev.Owner != api.OwnerForeign || ev.Bridge != "brw" {
			t.Errorf("%s: %+v", name, ev)
		}
		vsctl = append(vsctl, time.Unix(0, rec.At).Sub(start))

		name = fmt.Sprintf("la%d", i)
		before, after := r.ovsdbappAddPort("brw", name)
		rec, ev = r.waitEvent(name, func(_ record, ev api.PortEvent) bool { return ev.Interface == name })
		if ev.Kind != api.EventAdded || ev.Owner != api.OwnerForeign || ev.ExternalIDs["iface-id"] != "vm-"+name {
			t.Errorf("%s: %+v", name, ev)
		}
		appStart = append(appStart, time.Unix(0, rec.At).Sub(before))
		appCommit = append(appCommit, time.Unix(0, rec.At).Sub(after))
	}
	summary := func(ds []time.Duration) string {
		slices.Sort(ds)
		return fmt.Sprintf("min %v median %v max %v", ds[0].Round(10*time.Microsecond), ds[len(ds)/2].Round(10*time.Microsecond), ds[len(ds)-1].Round(10*time.Microsecond))
	}
	t.Logf("LATENCY over %d ports: ovs-vsctl add-port (from its start) %s; the command itself took %s", n, summary(vsctl), summary(vsctlTook))
	t.Logf("LATENCY over %d ports: ovsdbapp add_port+db_set from the transaction's start %s; from its commit's return %s", n, summary(appStart), summary(appCommit))
}
