package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
	"github.com/ovsplane/ovsplane/test/lab"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// shortDir returns a private directory short enough for unix socket paths.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "emb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func open(t *testing.T, dir string, opts Options) *DB {
	t.Helper()
	db, err := Open(ctxT(t), dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func dial(t *testing.T, endpoint string) client.Client {
	t.Helper()
	c, err := ovsdbtest.Dial(ctxT(t), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func transact(t *testing.T, c client.Client, ops ...ovsdb.Operation) {
	t.Helper()
	res, err := c.Transact(ctxT(t), ops...)
	if err != nil {
		t.Fatalf("transact: %v", err)
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		t.Fatalf("transact: %v %+v", err, res)
	}
}

func must(t *testing.T) func([]ovsdb.Operation, error) []ovsdb.Operation {
	return func(ops []ovsdb.Operation, err error) []ovsdb.Operation {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ops
	}
}

// populate writes an Open_vSwitch row, a bridge with two ports, then
// modifies and deletes some of it, each step its own transaction.
func populate(t *testing.T, c client.Client) {
	ovs := &vswitch.OpenvSwitch{UUID: "ovs", ExternalIDs: map[string]string{"system-id": "x"}}
	transact(t, c, must(t)(c.Create(ovs))...)
	var rows []vswitch.OpenvSwitch
	if err := c.List(ctxT(t), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("list: %v %d", err, len(rows))
	}
	ovs = &rows[0]
	var ops []ovsdb.Operation
	br := &vswitch.Bridge{UUID: "br", Name: "br0", DatapathType: "netdev"}
	for _, name := range []string{"br0", "p1"} {
		iface := &vswitch.Interface{UUID: "i" + name, Name: name, Type: "internal"}
		port := &vswitch.Port{UUID: "p" + name, Name: name, Interfaces: []string{iface.UUID}}
		ops = append(ops, must(t)(c.Create(iface))...)
		ops = append(ops, must(t)(c.Create(port))...)
		br.Ports = append(br.Ports, port.UUID)
	}
	ops = append(ops, must(t)(c.Create(br))...)
	ops = append(ops, must(t)(c.Where(ovs).Mutate(ovs,
		model.Mutation{Field: &ovs.Bridges, Mutator: ovsdb.MutateOperationInsert, Value: []string{"br"}},
		model.Mutation{Field: &ovs.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1}))...)
	transact(t, c, ops...)
	// Modify: clear a map to its default, set another column.
	ovs.ExternalIDs = map[string]string{}
	ovs.OtherConfig = map[string]string{"dpdk-init": "true"}
	transact(t, c, must(t)(c.Where(ovs).Update(ovs, &ovs.ExternalIDs, &ovs.OtherConfig))...)
	// Delete port p1 (garbage collection removes it and its interface).
	p := &vswitch.Port{Name: "p1"}
	if err := c.Get(ctxT(t), p); err != nil {
		t.Fatal(err)
	}
	b := &vswitch.Bridge{Name: "br0"}
	transact(t, c, must(t)(c.Where(b).Mutate(b,
		model.Mutation{Field: &b.Ports, Mutator: ovsdb.MutateOperationDelete, Value: []string{p.UUID}}))...)
}

// contents returns every row of the database c mirrors, as JSON text per
// table, sorted.
func contents(t *testing.T, c client.Client) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	add := func(table string, v any) {
		rv := reflect.ValueOf(v).Elem()
		for i := 0; i < rv.Len(); i++ {
			text, err := json.Marshal(rv.Index(i).Interface())
			if err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], string(text))
		}
		sort.Strings(out[table])
	}
	var o []vswitch.OpenvSwitch
	var b []vswitch.Bridge
	var p []vswitch.Port
	var i []vswitch.Interface
	for _, l := range []any{&o, &b, &p, &i} {
		if err := c.List(ctxT(t), l); err != nil {
			t.Fatal(err)
		}
	}
	add("Open_vSwitch", &o)
	add("Bridge", &b)
	add("Port", &p)
	add("Interface", &i)
	return out
}

func TestReopenKeepsContents(t *testing.T) {
	dir := shortDir(t)
	db := open(t, dir, Options{Comment: "test"})
	c := dial(t, db.Endpoint())
	populate(t, c)
	want := contents(t, dial(t, db.Endpoint()))
	if len(want["Port"]) != 1 || len(want["Interface"]) != 1 || len(want["Bridge"]) != 1 {
		t.Fatalf("unexpected contents before restart: %v", want)
	}
	c.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := open(t, dir, Options{})
	got := contents(t, dial(t, db2.Endpoint()))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen:\n got %v\nwant %v", got, want)
	}
}

// TestTornTail writes transactions that each bump next_cfg, remembering the
// file size after each acknowledgement, then opens copies truncated at
// random offsets: each must load exactly the transactions complete before
// the cut.
func TestTornTail(t *testing.T) {
	dir := shortDir(t)
	db := open(t, dir, Options{CompactBytes: -1})
	c := dial(t, db.Endpoint())
	transact(t, c, must(t)(c.Create(&vswitch.OpenvSwitch{UUID: "ovs"}))...)
	size := func() int64 {
		fi, err := os.Stat(db.Path())
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	bounds := []int64{size()} // bounds[k]: size after next_cfg reached k
	const n = 20
	for k := 1; k <= n; k++ {
		var rows []vswitch.OpenvSwitch
		if err := c.List(ctxT(t), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("list: %v", err)
		}
		ovs := &rows[0]
		transact(t, c, must(t)(c.Where(ovs).Mutate(ovs,
			model.Mutation{Field: &ovs.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1},
			model.Mutation{Field: &ovs.ExternalIDs, Mutator: ovsdb.MutateOperationInsert, Value: map[string]string{fmt.Sprint("k", k): "v"}}))...)
		bounds = append(bounds, size())
	}
	c.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	offsets := []int64{0, 1, bounds[0] - 1, bounds[0], bounds[n], bounds[n] - 1, bounds[3] + 1}
	for i := 0; i < 25; i++ {
		offsets = append(offsets, rng.Int63n(int64(len(full))+1))
	}
	for _, off := range offsets {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			d := shortDir(t)
			if err := os.WriteFile(filepath.Join(d, DBFile), full[:off], 0o640); err != nil {
				t.Fatal(err)
			}
			db := open(t, d, Options{})
			c := dial(t, db.Endpoint())
			var rows []vswitch.OpenvSwitch
			if err := c.List(ctxT(t), &rows); err != nil {
				t.Fatal(err)
			}
			if off < bounds[0] {
				if len(rows) != 0 {
					t.Fatalf("cut at %d before the first commit, got %d rows", off, len(rows))
				}
				return
			}
			want := 0
			for k, b := range bounds {
				if b <= off {
					want = k
				}
			}
			if len(rows) != 1 || rows[0].NextCfg != want || len(rows[0].ExternalIDs) != want {
				t.Fatalf("cut at %d: got %+v, want next_cfg %d", off, rows, want)
			}
			// The torn tail is gone and new commits append after the prefix.
			ovs := &rows[0]
			transact(t, c, must(t)(c.Where(ovs).Mutate(ovs,
				model.Mutation{Field: &ovs.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1}))...)
			c.Close()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			buf, err := os.ReadFile(db.Path())
			if err != nil {
				t.Fatal(err)
			}
			if _, good := parseLog(buf); good != len(buf) {
				t.Fatalf("file has an invalid tail at %d of %d", good, len(buf))
			}
			db2 := open(t, d, Options{})
			var again []vswitch.OpenvSwitch
			if err := dial(t, db2.Endpoint()).List(ctxT(t), &again); err != nil || len(again) != 1 || again[0].NextCfg != want+1 {
				t.Fatalf("after append: %v %+v", err, again)
			}
		})
	}
}

func TestCompaction(t *testing.T) {
	dir := shortDir(t)
	db := open(t, dir, Options{CompactBytes: 1})
	c := dial(t, db.Endpoint())
	populate(t, c)
	if err := db.Compact(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	want := contents(t, dial(t, db.Endpoint()))
	buf, err := os.ReadFile(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if recs, good := parseLog(buf); len(recs) != 2 || good != len(buf) {
		t.Fatalf("after Compact: %d records, valid up to %d of %d", len(recs), good, len(buf))
	}
	c.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := open(t, dir, Options{})
	if got := contents(t, dial(t, db2.Endpoint())); !reflect.DeepEqual(got, want) {
		t.Fatalf("after compaction and reopen:\n got %v\nwant %v", got, want)
	}
}

// TestRealOVS checks the file with ovsdb-tool and a real ovsdb-server.
func TestRealOVS(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	dir := shortDir(t)
	db := open(t, dir, Options{Comment: "ovsplane"})
	c := dial(t, db.Endpoint())
	populate(t, c)
	want := contents(t, dial(t, db.Endpoint()))
	c.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	out, err := exec.CommandContext(ctx, "ovsdb-tool", "show-log", "-m", db.Path()).CombinedOutput()
	if err != nil {
		t.Fatalf("ovsdb-tool show-log: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `table Bridge insert row "br0"`) || !strings.Contains(string(out), "ovsplane") {
		t.Fatalf("ovsdb-tool show-log -m:\n%s", out)
	}
	out, err = exec.CommandContext(ctx, "ovsdb-tool", "query", db.Path(),
		`["Open_vSwitch",{"op":"select","table":"Port","where":[],"columns":["name"]}]`).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"name":"br0"`) || strings.Contains(string(out), "p1") {
		t.Fatalf("ovsdb-tool query: %v\n%s", err, out)
	}
	o := lab.StartOVSDB(t)
	o.Stop(t)
	buf, err := os.ReadFile(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.DBPath, buf, 0o640); err != nil {
		t.Fatal(err)
	}
	o.Start(t)
	if got := contents(t, dial(t, o.Endpoint)); !reflect.DeepEqual(got, want) {
		t.Fatalf("real ovsdb-server on our file:\n got %v\nwant %v", got, want)
	}
	out, err = exec.CommandContext(ctx, "ovsdb-client", "dump", o.Endpoint, "Open_vSwitch", "Bridge").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "br0") {
		t.Fatalf("ovsdb-client dump: %v\n%s", err, out)
	}
}

// TestAutoCompaction commits until the log passes the threshold and doubles:
// the file is compacted on its own and keeps the contents.
func TestAutoCompaction(t *testing.T) {
	dir := shortDir(t)
	db := open(t, dir, Options{CompactBytes: 1})
	c := dial(t, db.Endpoint())
	transact(t, c, must(t)(c.Create(&vswitch.OpenvSwitch{UUID: "ovs"}))...)
	const n = 60
	big := strings.Repeat("x", 1000)
	for k := 1; k <= n; k++ {
		var rows []vswitch.OpenvSwitch
		if err := c.List(ctxT(t), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("list: %v", err)
		}
		ovs := &rows[0]
		transact(t, c, must(t)(c.Where(ovs).Mutate(ovs,
			model.Mutation{Field: &ovs.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1},
			model.Mutation{Field: &ovs.ExternalIDs, Mutator: ovsdb.MutateOperationInsert, Value: map[string]string{fmt.Sprint("k", k): big}}))...)
	}
	want := contents(t, dial(t, db.Endpoint()))
	buf, err := os.ReadFile(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if recs, good := parseLog(buf); len(recs) >= n || good != len(buf) {
		t.Fatalf("no compaction: %d records, valid up to %d of %d", len(recs), good, len(buf))
	}
	c.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := open(t, dir, Options{})
	got := contents(t, dial(t, db2.Endpoint()))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after automatic compaction and reopen:\n got %v\nwant %v", got, want)
	}
}

// TestWithSimulatedVswitchd runs the simulated ovs-vswitchd (ovsdb/simvswitchd) against
// the embedded database: the ofports it assigns survive a restart.
func TestWithSimulatedVswitchd(t *testing.T) {
	dir := shortDir(t)
	db := open(t, dir, Options{})
	v, err := simvswitchd.New(ctxT(t), simvswitchd.Config{Endpoint: db.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, db.Endpoint())
	populate(t, c)
	end := time.Now().Add(60 * time.Second)
	for {
		var rows []vswitch.OpenvSwitch
		var ifaces []vswitch.Interface
		if err := c.List(ctxT(t), &rows); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctxT(t), &ifaces); err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && rows[0].CurCfg == rows[0].NextCfg && len(ifaces) == 1 && ifaces[0].Ofport != nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("vswitchd never acknowledged: %+v %+v", rows, ifaces)
		}
		time.Sleep(10 * time.Millisecond)
	}
	v.Close()
	want := contents(t, dial(t, db.Endpoint()))
	c.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := open(t, dir, Options{})
	if got := contents(t, dial(t, db2.Endpoint())); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen:\n got %v\nwant %v", got, want)
	}
}
