package dbcmd_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
	vsschema "github.com/ovsplane/ovsplane/ovsdb/vswitch/schema"
	"github.com/ovsplane/ovsplane/test/lab"
)

func str(s string) datum.Datum {
	return datum.Datum{Keys: []datum.Atom{{Type: datum.TypeString, Str: s}}}
}

func uuidAtom(u string) datum.Atom { return datum.Atom{Type: datum.TypeUUID, Str: u} }

func smap(kv ...string) datum.Datum {
	var k, v []datum.Atom
	for i := 0; i+1 < len(kv); i += 2 {
		k = append(k, datum.Atom{Type: datum.TypeString, Str: kv[i]})
		v = append(v, datum.Atom{Type: datum.TypeString, Str: kv[i+1]})
	}
	return datum.NewDatum(k, v)
}

type env struct {
	t      *testing.T
	db     *lab.OVSDB
	conn   *dbcmd.Conn
	schema *dbcmd.Schema
}

func setup(t *testing.T) *env {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.Vsctl(t, "--no-wait", "init")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := dbcmd.Dial(ctx, db.Endpoint, dbcmd.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	schema, err := dbcmd.ParseSchema(vsschema.JSON())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, conn: conn, schema: schema}
}

func (e *env) view() *dbcmd.DB { return dbcmd.New(e.conn, e.schema) }

func (e *env) commit(db *dbcmd.DB) *dbcmd.Result {
	e.t.Helper()
	res, err := db.Commit(context.Background(), dbcmd.CommitOptions{Comment: "dbcmd test"})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// A bridge with a port and an interface, inserted by one commit with references between
// the new rows, is what ovs-vsctl then reads back.
func TestInsertWithReferencesAndReadBack(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	db := e.view()
	ovs, err := db.All(ctx, "Open_vSwitch")
	if err != nil || len(ovs) != 1 {
		t.Fatalf("Open_vSwitch rows: %v, %v", ovs, err)
	}
	iface, _ := db.Insert("Interface", "")
	iface.Set("name", str("p1"))
	port, _ := db.Insert("Port", "")
	port.Set("name", str("p1"))
	port.Set("interfaces", datum.Datum{Keys: []datum.Atom{uuidAtom(iface.UUID())}})
	br, _ := db.Insert("Bridge", "")
	br.Set("name", str("br0"))
	br.Add("ports", datum.Datum{Keys: []datum.Atom{uuidAtom(port.UUID())}})
	br.Set("external_ids", smap("a", "1", "b", "x y"))
	ovs[0].Add("bridges", datum.Datum{Keys: []datum.Atom{uuidAtom(br.UUID())}})

	// The view sees its own inserts before committing.
	rows, err := db.Lookup(ctx, "Port", "name", str("p1"))
	if err != nil || len(rows) != 1 || rows[0] != port {
		t.Fatalf("Lookup of an inserted port = %v, %v", rows, err)
	}
	res := e.commit(db)
	if res.Status != dbcmd.Success || len(res.UUIDs) != 3 {
		t.Fatalf("commit: %+v", res)
	}
	got := e.db.Vsctl(t, "--bare", "--columns=name", "list", "Port", res.UUIDs[port.UUID()])
	if got != "p1" {
		t.Errorf("ovs-vsctl sees port name %q", got)
	}
	if got := e.db.Vsctl(t, "list-ports", "br0"); got != "p1" {
		t.Errorf("list-ports br0 = %q", got)
	}
	if got := e.db.Vsctl(t, "br-get-external-id", "br0"); got != "a=1\nb=x y" {
		t.Errorf("external ids = %q", got)
	}

	// A fresh view finds the rows with targeted selects and knows their values.
	db = e.view()
	brs, err := db.Containing(ctx, "Bridge", "ports", uuidAtom(res.UUIDs[port.UUID()]), "name")
	if err != nil || len(brs) != 1 {
		t.Fatalf("Containing = %v, %v", brs, err)
	}
	if n, _ := brs[0].Loaded("name"); !n.Equal(str("br0")) {
		t.Errorf("bridge name %v", n)
	}
	if _, ok := brs[0].Loaded("ports"); ok {
		t.Errorf("ports loaded although not asked for")
	}
	if db.HasChanges() {
		t.Errorf("a read-only view has changes")
	}
	if r := e.commit(db); r.Status != dbcmd.Unchanged {
		t.Errorf("read-only commit status %v", r.Status)
	}
}

// Changes to map and set columns that were never read are sent as mutations, so they merge
// with what another writer did in between.
func TestMutationsMergeWithConcurrentWriters(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.db.Vsctl(t, "--no-wait", "add-br", "br0", "--", "br-set-external-id", "br0", "keep", "1", "--", "br-set-external-id", "br0", "gone", "2")
	db := e.view()
	brs, err := db.Lookup(ctx, "Bridge", "name", str("br0"))
	if err != nil || len(brs) != 1 {
		t.Fatalf("Lookup br0: %v %v", brs, err)
	}
	// Meanwhile another writer adds a key.
	e.db.Vsctl(t, "--no-wait", "br-set-external-id", "br0", "other", "3")
	brs[0].Add("external_ids", smap("new", "4"))
	brs[0].Remove("external_ids", datum.Datum{Keys: []datum.Atom{{Type: datum.TypeString, Str: "gone"}}})
	if r := e.commit(db); r.Status != dbcmd.Success {
		t.Fatalf("commit: %+v", r)
	}
	if got := e.db.Vsctl(t, "br-get-external-id", "br0"); got != "keep=1\nnew=4\nother=3" {
		t.Errorf("external ids = %q", got)
	}
	// Reading then changing a loaded map: a changed value is delete+insert.
	db = e.view()
	brs, _ = db.Lookup(ctx, "Bridge", "name", str("br0"), "external_ids")
	cur, _ := brs[0].Loaded("external_ids")
	i, _ := cur.Find(datum.Atom{Type: datum.TypeString, Str: "keep"})
	cur.Values[i].Str = "changed"
	brs[0].Set("external_ids", cur)
	if r := e.commit(db); r.Status != dbcmd.Success {
		t.Fatalf("commit: %+v", r)
	}
	if got := e.db.Get(t, "Bridge", "br0", "external_ids:keep"); got != "changed" {
		t.Errorf("external_ids:keep = %q", got)
	}
}

// Verify and VerifyAbsent turn a concurrent change of what was read into TryAgain, and
// nothing of the transaction is applied.
func TestVerifyDetectsConcurrentChanges(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.db.Vsctl(t, "--no-wait", "add-br", "br0")
	db := e.view()
	brs, _ := db.Lookup(ctx, "Bridge", "name", str("br0"))
	if err := brs[0].Verify(ctx, "fail_mode"); err != nil {
		t.Fatal(err)
	}
	brs[0].Set("stp_enable", datum.Datum{Keys: []datum.Atom{{Type: datum.TypeBoolean, Bool: true}}})
	e.db.Vsctl(t, "--no-wait", "set-fail-mode", "br0", "secure")
	if r := e.commit(db); r.Status != dbcmd.TryAgain {
		t.Fatalf("status %v, want TryAgain", r.Status)
	}
	if got := e.db.Get(t, "Bridge", "br0", "stp_enable"); got != "false" {
		t.Errorf("stp_enable = %s after a failed transaction", got)
	}

	db = e.view()
	if rows, _ := db.Lookup(ctx, "Port", "name", str("p9")); len(rows) != 0 {
		t.Fatalf("p9 exists")
	}
	db.VerifyAbsent("Port", "name", str("p9"))
	brs, _ = db.Lookup(ctx, "Bridge", "name", str("br0"))
	brs[0].Set("stp_enable", datum.Datum{Keys: []datum.Atom{{Type: datum.TypeBoolean, Bool: true}}})
	e.db.Vsctl(t, "--no-wait", "add-port", "br0", "p9")
	if r := e.commit(db); r.Status != dbcmd.TryAgain {
		t.Fatalf("status %v, want TryAgain", r.Status)
	}
}

// Server refusals come back as OVS prints them: the error object, keys sorted, compact.
func TestServerErrorsAreReportedLikeTheIDL(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.db.Vsctl(t, "--no-wait", "add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "Port", "p1", "qos=@q", "--", "--id=@q", "create", "QoS", "type=linux-htb")
	db := e.view()
	qos, _ := db.Lookup(ctx, "QoS", "type", str("linux-htb"))
	if len(qos) != 1 {
		t.Fatalf("QoS rows: %v", qos)
	}
	qos[0].Delete() // a root-table row still referenced by Port p1
	r := e.commit(db)
	if r.Status != dbcmd.Error || !strings.HasPrefix(r.Error, `{"details":"cannot delete QoS row `) ||
		!strings.HasSuffix(r.Error, `"error":"referential integrity violation"}`) {
		t.Fatalf("result %+v", r)
	}
	// Deleting a row of a non-root table sends nothing: ovsdb-server collects it when it is no
	// longer referenced.
	db = e.view()
	ports, _ := db.Lookup(ctx, "Port", "name", str("p1"))
	ports[0].Delete()
	if rows, _ := db.Lookup(ctx, "Port", "name", str("p1")); len(rows) != 0 {
		t.Errorf("a deleted row is still visible: %v", rows)
	}
	if r := e.commit(db); r.Status != dbcmd.Unchanged {
		t.Errorf("deleting a non-root row: status %v, want unchanged", r.Status)
	}
	// A dry run checks and aborts.
	db = e.view()
	brs, _ := db.Lookup(ctx, "Bridge", "name", str("br0"))
	brs[0].Set("datapath_type", str("netdev"))
	res, err := db.Commit(ctx, dbcmd.CommitOptions{DryRun: true})
	if err != nil || res.Status != dbcmd.Success {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	if got := e.db.Get(t, "Bridge", "br0", "datapath_type"); got != "" {
		t.Errorf("dry run changed datapath_type to %q", got)
	}
}

// WaitCurCfg returns once cur_cfg reaches the value the commit's increment produced.
func TestWaitCurCfg(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	db := e.view()
	ovs, _ := db.All(ctx, "Open_vSwitch")
	ovs[0].Set("external_ids", smap("x", "1"))
	res, err := db.Commit(ctx, dbcmd.CommitOptions{IncrementNextCfg: ovs[0]})
	if err != nil || res.Status != dbcmd.Success || res.NextCfg < 1 {
		t.Fatalf("commit %+v %v", res, err)
	}
	done := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		done <- e.conn.WaitCurCfg(wctx, res.NextCfg)
	}()
	select {
	case err := <-done:
		t.Fatalf("WaitCurCfg returned before cur_cfg moved: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	e.db.Vsctl(t, "--no-wait", "set", "Open_vSwitch", ".", "cur_cfg="+itoa(res.NextCfg))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// Dial reports unreachable databases as ovs-vsctl does.
func TestDialErrorWording(t *testing.T) {
	_, err := dbcmd.Dial(context.Background(), "unix:/nonexistent/db.sock", dbcmd.DialOptions{})
	if err == nil || err.Error() != "unix:/nonexistent/db.sock: database connection failed (No such file or directory)" {
		t.Fatalf("err = %v", err)
	}
}

// Containing answers from the server without downloading the (possibly huge) set column, and
// still sees this invocation's own pending additions and removals.
func TestContainingSeesPendingEdits(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.db.Vsctl(t, "--no-wait", "add-br", "br0", "--", "add-port", "br0", "p1", "--", "add-br", "br1")
	db := e.view()
	p1, _ := db.Lookup(ctx, "Port", "name", str("p1"))
	br0, _ := db.Lookup(ctx, "Bridge", "name", str("br0"))
	br1, _ := db.Lookup(ctx, "Bridge", "name", str("br1"))
	if len(p1) != 1 || len(br0) != 1 || len(br1) != 1 {
		t.Fatal("setup rows missing")
	}
	id := uuidAtom(p1[0].UUID())
	has := func(want string) {
		t.Helper()
		rows, err := db.Containing(ctx, "Bridge", "ports", id, "name")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rows {
			n, _ := r.Loaded("name")
			names = append(names, n.Keys[0].Str)
		}
		if strings.Join(names, ",") != want {
			t.Errorf("bridges containing p1 = %q, want %q", names, want)
		}
		if _, ok := br0[0].Loaded("ports"); ok {
			t.Errorf("br0's ports were downloaded")
		}
	}
	has("br0")
	br0[0].Remove("ports", datum.Datum{Keys: []datum.Atom{id}})
	br1[0].Add("ports", datum.Datum{Keys: []datum.Atom{id}})
	has("br1")
	if r := e.commit(db); r.Status != dbcmd.Success {
		t.Fatalf("commit %+v", r)
	}
	if got := e.db.Vsctl(t, "port-to-br", "p1"); got != "br1" {
		t.Errorf("port-to-br p1 = %q", got)
	}
}

// A string that is not valid UTF-8 is refused as ovsdb-server refuses the raw bytes ovs-vsctl
// sends (encoding/json would store U+FFFD instead): the transaction fails with the server's
// constraint violation, naming the first invalid sequence as OVS does, and nothing is written.
// An operation before it that fails (here a verified column that changed) decides the result,
// as it does on the server, which executes operations in order.
func TestInvalidUTF8IsRefusedLikeOVSDBServer(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.db.Vsctl(t, "--no-wait", "add-br", "br0")
	for _, tc := range []struct {
		name  string
		value datum.Datum
		col   string
		bad   string
	}{
		{"map value", smap("k", "\xff"), "external_ids", "0xff"},
		{"map key", smap("a\xc3(b", "v"), "external_ids", "0xc3 0x28"},
		{"truncated sequence", smap("k", "a\xe1\x80"), "external_ids", "0xe1 0x80 0x00"},
		{"surrogate", str("\xed\xa0\x80"), "datapath_type", "0xed 0xa0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := e.view()
			brs, _ := db.Lookup(ctx, "Bridge", "name", str("br0"))
			if len(brs) != 1 {
				t.Fatalf("Bridge br0: %v", brs)
			}
			if err := brs[0].Set(tc.col, tc.value); err != nil {
				t.Fatal(err)
			}
			want := `{"details":"not a valid UTF-8 string: invalid UTF-8 sequence ` + tc.bad + `","error":"constraint violation"}`
			if r := e.commit(db); r.Status != dbcmd.Error || r.Error != want {
				t.Errorf("result %+v, want Error %s", r, want)
			}
			if got := e.db.Get(t, "Bridge", "br0", tc.col); got != "{}" && got != "[]" && got != "" {
				t.Errorf("%s = %s after a refused transaction", tc.col, got)
			}
		})
	}
	t.Run("earlier failure first", func(t *testing.T) {
		db := e.view()
		brs, _ := db.Lookup(ctx, "Bridge", "name", str("br0"))
		if err := brs[0].Verify(ctx, "fail_mode"); err != nil {
			t.Fatal(err)
		}
		if err := brs[0].Set("external_ids", smap("k", "\xff")); err != nil {
			t.Fatal(err)
		}
		e.db.Vsctl(t, "--no-wait", "set-fail-mode", "br0", "secure")
		if r := e.commit(db); r.Status != dbcmd.TryAgain {
			t.Errorf("result %+v, want TryAgain (the wait fails before the update is looked at)", r)
		}
	})
}

// A lookup by a string that is not valid UTF-8 matches no stored row, not even one whose name
// is U+FFFD (what encoding/json would send in its place): ovs-vsctl's IDL compares bytes. A row
// this invocation named so is found.
func TestLookupByInvalidUTF8(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.db.Vsctl(t, "--no-wait", "add-br", "\uFFFD")
	db := e.view()
	if rows, err := db.Lookup(ctx, "Bridge", "name", str("\uFFFD")); err != nil || len(rows) != 1 {
		t.Fatalf("Lookup of the bridge named U+FFFD = %v, %v; want it", rows, err)
	}
	db = e.view()
	if rows, err := db.Lookup(ctx, "Bridge", "name", str("\xff")); err != nil || len(rows) != 0 {
		t.Errorf(`Lookup of "\xff" = %v, %v; want no row`, rows, err)
	}
	r, err := db.Insert("Bridge", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Set("name", str("\xff")); err != nil {
		t.Fatal(err)
	}
	if rows, err := db.Lookup(ctx, "Bridge", "name", str("\xff")); err != nil || len(rows) != 1 || rows[0] != r {
		t.Errorf(`Lookup of "\xff" after inserting it = %v, %v; want the inserted row`, rows, err)
	}
}
