package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/internal/replica"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// TestCacheReadOnlyThroughRows keeps rowReader the one seam over the replica: no product file
// of package ovsdb but rows.go may call libovsdb's Cache(), so that the replica behind the seam
// can be replaced without hunting for direct reads.
func TestCacheReadOnlyThroughRows(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Cache" && len(call.Args) == 0 && name != "rows.go" {
				t.Errorf("%s: reads libovsdb's cache directly; read through Client.read (rows.go)", fset.Position(call.Pos()))
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files of package ovsdb; is the test running in its directory?", checked)
	}
}

// TestRowReaderCopies checks the seam's contract on both read paths: byName and byUUID return
// copies the caller may change without changing the replica, tags and counts answer, and the
// planner's lookup fills its model from a copy.
func TestRowReaderCopies(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(map[bool]string{true: "libovsdb cache", false: "compact replica"}[legacy], func(t *testing.T) {
			testRowReaderCopies(t, legacy)
		})
	}
}

func testRowReaderCopies(t *testing.T, legacy bool) {
	c, _ := dialInternalPath(t, legacy)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
		EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: "p0", Interfaces: []model.Interface{{Name: "p0", Type: "internal"}}}}).
		Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	r, ok := c.read()
	if !ok {
		t.Fatal("no replica after a commit")
	}
	if r.root() == nil {
		t.Fatal("no Open_vSwitch row")
	}
	uuid, m := r.byName(vswitch.PortTable, "p0")
	p, ok := m.(*vswitch.Port)
	if !ok || uuid == "" || p.Name != "p0" || p.UUID != uuid {
		t.Fatalf("byName(Port, p0) = %q, %#v", uuid, m)
	}
	p.ExternalIDs[OwnerKey] = "someone-else"
	if _, again := r.byName(vswitch.PortTable, "p0"); again.(*vswitch.Port).ExternalIDs[OwnerKey] != DefaultOwner {
		t.Errorf("changing byName's row changed the cache: owner now %q", again.(*vswitch.Port).ExternalIDs[OwnerKey])
	}
	byID, ok := r.byUUID(vswitch.PortTable, uuid).(*vswitch.Port)
	if !ok || byID.Name != "p0" {
		t.Fatalf("byUUID(Port, %s) = %#v", uuid, byID)
	}
	if !r.has(vswitch.PortTable, uuid) || r.has(vswitch.PortTable, "00000000-0000-0000-0000-000000000000") {
		t.Error("has disagrees with the rows")
	}
	if n := r.count(vswitch.InterfaceTable); n != 2 { // p0 and br0's local interface
		t.Errorf("count(Interface) = %d, want 2", n)
	}
	var names []string
	r.each(vswitch.InterfaceTable, func(_ string, m libmodel.Model) bool {
		names = append(names, m.(*vswitch.Interface).Name)
		return false // stops after the first
	})
	if len(names) != 1 {
		t.Errorf("each went on after fn returned false: %v", names)
	}
	if _, m := r.byName(vswitch.ControllerTable, "x"); m != nil {
		t.Errorf("byName on a table without a name index returned %#v", m)
	}

	tags, ok := c.Tags(vswitch.PortTable, "p0")
	if !ok || tags.Get(OwnerKey) != DefaultOwner {
		t.Fatalf("Tags(Port, p0) = %v, %v", tags, ok)
	}
	if v, ok := tags.Lookup("no-such-key"); ok || v != "" {
		t.Errorf("Lookup of a missing key = %q, %v", v, ok)
	}
	n := 0
	for k, v := range tags.All() {
		if got, _ := tags.Lookup(k); got != v {
			t.Errorf("All yields %s=%s, Lookup says %q", k, v, got)
		}
		n++
	}
	if n != tags.Len() || n < 2 { // owner and generation at least
		t.Errorf("All yielded %d pairs, Len says %d", n, tags.Len())
	}
	if _, ok := c.Tags(vswitch.ControllerTable, "x"); ok {
		t.Error("Tags of a table without names answered")
	}

	pl := newPlanner(ctx, c, 1)
	got := &vswitch.Port{Name: "p0"}
	found, err := pl.lookup(vswitch.PortTable, got)
	if err != nil || !found || got.UUID != uuid || got.ExternalIDs[OwnerKey] != DefaultOwner {
		t.Fatalf("lookup(p0) = %v, %v, %#v", found, err, got)
	}
	if err := assign(&vswitch.Bridge{}, &vswitch.Port{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("assign of a Port into a Bridge: %v, want ErrInvalid", err)
	}
}

// BenchmarkPlanUnchangedPorts plans, against the cache, a transaction ensuring 1,000 ports that
// already exist as asked: what a reconciler's drift pass costs per 1,000 owned ports, dominated
// by looking rows up. Run: go test -run '^$' -bench PlanUnchangedPorts ./ovsdb/
func BenchmarkPlanUnchangedPorts(b *testing.B) {
	c, _ := dialInternal(b)
	ctx := context.Background()
	if err := c.Init(ctx); err != nil {
		b.Fatal(err)
	}
	build := func() *Txn {
		tx := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil)
		for i := range 1000 {
			n := fmt.Sprintf("p%d", i)
			tx.EnsurePort(PortOn{Bridge: "br0", Port: model.Port{Name: n, ExternalIDs: map[string]string{"a": "b"},
				Interfaces: []model.Interface{{Name: n, Type: "internal", Options: map[string]string{"x": "y"}}}}})
		}
		return tx
	}
	if _, err := build().Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		tx := build()
		p := newPlanner(ctx, tx.c, tx.gen)
		for _, f := range tx.intents {
			if err := f(p); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.finish(); err != nil {
			b.Fatal(err)
		}
		if len(p.ops) > 0 {
			b.Fatalf("planned %d operations for ports that are as asked", len(p.ops))
		}
	}
}

// TestCompactReplicaMonitorsTheCacheColumns keeps the two read paths' monitors in step: the
// compact replica asks for exactly the tables and columns libovsdb's monitor asked for
// (monitoredColumns), with and without statistics.
func TestCompactReplicaMonitorsTheCacheColumns(t *testing.T) {
	c, _ := dialInternal(t)
	for _, stats := range []bool{false, true} {
		mon := c.lc.NewMonitor(monitoredColumns(stats)...)
		if len(mon.Errors) > 0 {
			t.Fatal(mon.Errors)
		}
		want := map[string][]string{}
		for _, tm := range mon.Tables {
			cols := slices.Clone(tm.Fields)
			if len(cols) == 0 { // every column of the table
				for col := range vswitch.Schema().Table(tm.Table).Columns {
					cols = append(cols, col)
				}
			}
			slices.Sort(cols)
			want[tm.Table] = cols
		}
		store, err := replica.NewStore(replica.Options{Statistics: stats})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for table, req := range store.MonitorRequests() {
			got[table] = req.Columns
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("statistics %v: the compact replica monitors %v, libovsdb's cache %v", stats, got, want)
		}
	}
}

// countingHandler counts the row events it gets; with quiet set it says it wants none.
type countingHandler struct {
	quiet  bool
	events atomic.Int64
}

func (h *countingHandler) wantsEvents() bool                               { return !h.quiet }
func (h *countingHandler) OnAdd(string, libmodel.Model)                    { h.events.Add(1) }
func (h *countingHandler) OnUpdate(string, libmodel.Model, libmodel.Model) { h.events.Add(1) }
func (h *countingHandler) OnDelete(string, libmodel.Model)                 { h.events.Add(1) }

// TestCompactReplicaEventsOnlyForWantingHandlers: the compact replica gives every committed
// row change to the handlers that want events, and none to one that says it wants none (a
// paused watch), for which it would otherwise build every changed row.
func TestCompactReplicaEventsOnlyForWantingHandlers(t *testing.T) {
	c, _ := dialInternalPath(t, false)
	quiet, loud := &countingHandler{quiet: true}, &countingHandler{}
	c.subscribe(quiet)
	c.subscribe(loud)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for loud.events.Load() < 3 && time.Now().Before(deadline) { // root, bridge, port, interface
		time.Sleep(10 * time.Millisecond)
	}
	if loud.events.Load() < 3 {
		t.Fatalf("a handler that wants events got %d", loud.events.Load())
	}
	if n := quiet.events.Load(); n != 0 {
		t.Errorf("a handler that wants no events got %d", n)
	}
}
