//go:build linux

package ovsdb

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
	"github.com/ovsplane/ovsplane/test/lab"
)

// monitoredTables are the tables both read paths hold.
var monitoredTables = []string{vswitch.OpenvSwitchTable, vswitch.BridgeTable, vswitch.PortTable, vswitch.InterfaceTable,
	vswitch.ControllerTable, vswitch.MirrorTable, vswitch.NetFlowTable, vswitch.IPFIXTable, vswitch.SFlowTable,
	vswitch.FlowSampleCollectorSetTable, vswitch.QoSTable, vswitch.QueueTable}

// dialBoth connects one client reading libovsdb's cache and one reading the compact replica
// to the same server.
func dialBoth(t *testing.T, endpoint string) (legacy, compact *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	legacy, err := Dial(ctx, Config{Endpoints: []string{endpoint}, Logger: log, libovsdbCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(legacy.Close)
	compact, err = Dial(ctx, Config{Endpoints: []string{endpoint}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(compact.Close)
	if legacy.store != nil || compact.store == nil {
		t.Fatal("the two clients do not read through the two paths")
	}
	return legacy, compact
}

// normalised returns a copy of m in the compact replica's canonical form: empty maps and
// sets nil, sets sorted (libovsdb keeps a set in the order it read it).
func normalised(m libmodel.Model) libmodel.Model {
	c := libmodel.Clone(m)
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if (f.Kind() == reflect.Map || f.Kind() == reflect.Slice) && f.Len() == 0 {
			f.SetZero()
			continue
		}
		if s, ok := f.Addr().Interface().(*[]string); ok {
			slices.Sort(*s)
		}
		if s, ok := f.Addr().Interface().(*[]int); ok {
			slices.Sort(*s)
		}
	}
	return c
}

// readsDiffer compares everything the two clients' rowReaders answer and returns the first
// difference, or "".
func readsDiffer(legacy, compact *Client) string {
	lr, _ := legacy.read()
	cr, _ := compact.read()
	if a, b := normalised(lr.root()), normalised(cr.root()); !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("root: libovsdb %+v, compact %+v", a, b)
	}
	for _, table := range monitoredTables {
		rows := func(r rowReader) map[string]libmodel.Model {
			out := map[string]libmodel.Model{}
			r.each(table, func(uuid string, m libmodel.Model) bool {
				out[uuid] = normalised(m)
				return true
			})
			return out
		}
		a, b := rows(lr), rows(cr)
		if len(a) != len(b) || lr.count(table) != cr.count(table) || cr.count(table) != len(b) {
			return fmt.Sprintf("%s: libovsdb has %d rows (count %d), compact %d (count %d)", table, len(a), lr.count(table), len(b), cr.count(table))
		}
		for uuid, ma := range a {
			if mb := b[uuid]; !reflect.DeepEqual(ma, mb) {
				return fmt.Sprintf("%s %s: libovsdb %+v, compact %+v", table, uuid, ma, mb)
			}
			if !cr.has(table, uuid) {
				return fmt.Sprintf("%s %s: compact has() is false", table, uuid)
			}
			if mb := cr.byUUID(table, uuid); !reflect.DeepEqual(ma, normalised(mb)) {
				return fmt.Sprintf("%s %s by uuid: libovsdb %+v, compact %+v", table, uuid, ma, mb)
			}
			name := nameOf(ma)
			if name == "" {
				continue
			}
			ua, na := lr.byName(table, name)
			ub, nb := cr.byName(table, name)
			if ua != ub || !reflect.DeepEqual(normalised(na), normalised(nb)) {
				return fmt.Sprintf("%s %q by name: libovsdb %s %+v, compact %s %+v", table, name, ua, na, ub, nb)
			}
			ta, oka := lr.tags(table, name)
			tb, okb := cr.tags(table, name)
			if oka != okb || !tagsMap(ta).equal(tagsMap(tb)) {
				return fmt.Sprintf("%s %q tags: libovsdb %v, compact %v", table, name, tagsMap(ta), tagsMap(tb))
			}
		}
	}
	if a, b := legacy.InterfaceStates(), compact.InterfaceStates(); !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("InterfaceStates: libovsdb %v, compact %v", a, b)
	}
	for name := range legacy.InterfaceStates() {
		a, erra := legacy.Interface(name)
		b, errb := compact.Interface(name)
		if !reflect.DeepEqual(a, b) || (erra == nil) != (errb == nil) {
			return fmt.Sprintf("Interface(%s): libovsdb %+v, compact %+v", name, a, b)
		}
	}
	if a, b := legacy.Owned(), compact.Owned(); len(a) != len(b) {
		return fmt.Sprintf("Owned: libovsdb %d rows, compact %d", len(a), len(b))
	}
	return ""
}

type tagMap map[string]string

func tagsMap(t Tags) tagMap {
	out := tagMap{}
	for k, v := range t.All() {
		out[k] = v
	}
	return out
}

func (a tagMap) equal(b tagMap) bool { return reflect.DeepEqual(a, b) }

// TestCompactReplicaReadsAsLibovsdbCache checks the compact replica against libovsdb's cache
// on a real ovsdb-server: the same rows through every read of the rowReader seam, after the
// client's own transactions and ovs-vsctl's (foreign rows, QoS, mirrors, controllers, flow
// export, changes and deletions), and again after ovsdb-server restarted with rows changed
// while it was down. During the restart the replica never loses a row: a reader sees the old
// state until the new monitor's reply replaces it.
func TestCompactReplicaReadsAsLibovsdbCache(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	legacy, compact := dialBoth(t, db.Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nowait := CommitOptions{NoWait: true}
	tx := compact.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", OtherConfig: map[string]string{"a": "1"}}, nil)
	for i := range 200 {
		n := fmt.Sprintf("p%d", i)
		p := model.Port{Name: n, ExternalIDs: map[string]string{"k": n},
			Interfaces: []model.Interface{{Name: n, Type: "internal", Options: map[string]string{"o": "v"}}}}
		if i%3 == 0 {
			tag := 10 + i
			p.Tag = &tag
		}
		if i%7 == 0 {
			p.Trunks = []int{3, 1, 2}
		}
		tx.EnsurePort(PortOn{Bridge: "br0", Port: p})
	}
	if _, err := tx.Commit(ctx, nowait); err != nil {
		t.Fatal(err)
	}
	db.Vsctl(t, "--no-wait", "add-br", "br1", "--", "add-port", "br1", "x1", "--", "set", "interface", "x1", "type=internal",
		"options:k=v", "mtu_request=1400", "--", "set", "port", "x1", "tag=5", "trunks=7,3")
	db.Vsctl(t, "--no-wait", "set-controller", "br1", "tcp:127.0.0.1:6653")
	db.Vsctl(t, "--no-wait", "--", "set", "port", "x1", "qos=@q", "--", "--id=@q", "create", "qos", "type=linux-htb",
		"other-config:max-rate=1000000", "queues:0=@q0", "--", "--id=@q0", "create", "queue", "other-config:min-rate=1000")
	db.Vsctl(t, "--no-wait", "--", "set", "bridge", "br1", "netflow=@nf", "--", "--id=@nf", "create", "netflow", "targets=\"10.0.0.1:2055\"")
	db.Vsctl(t, "--no-wait", "--", "set", "bridge", "br1", "mirrors=@m", "--", "--id=@p", "get", "port", "x1",
		"--", "--id=@m", "create", "mirror", "name=m1", "select-all=true", "output-port=@p")
	db.Vsctl(t, "--no-wait", "set", "interface", "p1", "external_ids:added=1", "--", "remove", "interface", "p2", "options", "o")
	db.Vsctl(t, "--no-wait", "del-port", "br0", "p3")
	eventuallyEqual(t, legacy, compact, "after the writes")

	// Restart with changes made while the server is down: the refilled replica has them, and
	// no reader ever sees an empty Interface table.
	var emptied atomic.Bool
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r, _ := compact.read(); r.count(vswitch.InterfaceTable) == 0 {
				emptied.Store(true)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	db.Stop(t)
	waitFor(t, "the compact client to see the outage", func() bool { return !compact.Connected() })
	if r, _ := compact.read(); r.count(vswitch.PortTable) < 200 {
		t.Errorf("during the outage the replica holds %d ports, want the last state (≥ 200)", r.count(vswitch.PortTable))
	}
	db.Start(t)
	db.Vsctl(t, "--no-wait", "del-port", "br0", "p4", "--", "set", "interface", "p5", "options:o=changed")
	waitFor(t, "both clients to reconnect", func() bool { return compact.Connected() && legacy.Connected() })
	eventuallyEqual(t, legacy, compact, "after the restart")
	close(stop)
	<-done
	if emptied.Load() {
		t.Error("a reader saw the compact replica's Interface table empty during the restart")
	}
	if _, ok := compact.Tags(vswitch.PortTable, "p4"); ok {
		t.Error("p4, deleted while the server was down, is still in the compact replica")
	}
}

func eventuallyEqual(t *testing.T, legacy, compact *Client, when string) {
	t.Helper()
	var diff string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if diff = readsDiffer(legacy, compact); diff == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s, the read paths still differ: %s", when, diff)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
