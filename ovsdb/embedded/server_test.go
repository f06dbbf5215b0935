package embedded

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/test/lab"
)

// rawConn is a bare JSON-RPC connection, to see exactly what a server sends.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	dec  *json.Decoder
	next int
}

// rawMsg is one message from the server.
type rawMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func rawDial(t *testing.T, endpoint string) *rawConn {
	t.Helper()
	nc, err := net.Dial("unix", strings.TrimPrefix(endpoint, "unix:"))
	if err != nil {
		t.Fatal(err)
	}
	// A safety net against a hanging server, not a timing assertion.
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, dec: json.NewDecoder(nc)}
}

// send sends a request and returns its id.
func (c *rawConn) send(method string, params ...any) int {
	c.t.Helper()
	c.next++
	b, err := json.Marshal(map[string]any{"id": c.next, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
	return c.next
}

func (c *rawConn) read() rawMsg {
	c.t.Helper()
	var m rawMsg
	if err := c.dec.Decode(&m); err != nil {
		c.t.Fatalf("read from server: %v", err)
	}
	return m
}

// await reads until the reply to id and returns it with the notifications
// that came before it.
func (c *rawConn) await(id int) (rawMsg, []rawMsg) {
	c.t.Helper()
	var notes []rawMsg
	for {
		m := c.read()
		if m.Method != "" {
			if string(m.ID) != "null" {
				c.t.Fatalf("server sent a request, not a notification: %s %s (id %s)", m.Method, m.Params, m.ID)
			}
			notes = append(notes, m)
			continue
		}
		if string(m.ID) == fmt.Sprint(id) {
			return m, notes
		}
	}
}

// call sends a request and waits for its reply.
func (c *rawConn) call(method string, params ...any) (rawMsg, []rawMsg) {
	c.t.Helper()
	return c.await(c.send(method, params...))
}

// transact runs the operations (a JSON array) and returns the results.
func (c *rawConn) transact(ops string) []json.RawMessage {
	c.t.Helper()
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(ops), &list); err != nil {
		c.t.Fatalf("bad test operations %s: %v", ops, err)
	}
	params := []any{"Open_vSwitch"}
	for _, op := range list {
		params = append(params, op)
	}
	m, _ := c.call("transact", params...)
	if string(m.Error) != "null" {
		c.t.Fatalf("transact %s: error %s", ops, m.Error)
	}
	var res []json.RawMessage
	if err := json.Unmarshal(m.Result, &res); err != nil {
		c.t.Fatalf("transact %s: result %s: %v", ops, m.Result, err)
	}
	return res
}

// summary reduces results to "ok", the error or "null", one per result.
func summary(res []json.RawMessage) []string {
	out := make([]string, len(res))
	for i, r := range res {
		var v struct {
			Error string `json:"error"`
		}
		switch {
		case string(r) == "null":
			out[i] = "null"
		case json.Unmarshal(r, &v) == nil && v.Error != "":
			out[i] = v.Error
		default:
			out[i] = "ok"
		}
	}
	return out
}

// Fixed UUIDs, so that the embedded database and ovsdb-server hold the same
// rows and their answers can be compared whole.
const (
	uOVS = "0000000a-0000-4000-8000-000000000000"
	uBr0 = "0000000b-0000-4000-8000-000000000000"
	uP1  = "00000001-0000-4000-8000-000000000000"
	uP2  = "00000002-0000-4000-8000-000000000000"
	uP3  = "00000003-0000-4000-8000-000000000000"
	uBrM = "0000000c-0000-4000-8000-000000000000"
)

// seed replaces the database's contents with bridge br0 and ports p1-p3.
var seed = strings.NewReplacer("OVS", uOVS, "BR0", uBr0, "P1", uP1, "P2", uP2, "P3", uP3).Replace(`[
 {"op":"delete","table":"Open_vSwitch","where":[]},
 {"op":"insert","table":"Interface","uuid-name":"i1","row":{"name":"p1"}},
 {"op":"insert","table":"Interface","uuid-name":"i2","row":{"name":"p2"}},
 {"op":"insert","table":"Interface","uuid-name":"i3","row":{"name":"p3"}},
 {"op":"insert","table":"Port","uuid":"P1","row":{"name":"p1","interfaces":["named-uuid","i1"]}},
 {"op":"insert","table":"Port","uuid":"P2","row":{"name":"p2","interfaces":["named-uuid","i2"]}},
 {"op":"insert","table":"Port","uuid":"P3","row":{"name":"p3","interfaces":["named-uuid","i3"]}},
 {"op":"insert","table":"Bridge","uuid":"BR0","row":{"name":"br0",
   "ports":["set",[["uuid","P1"],["uuid","P2"],["uuid","P3"]]],
   "other_config":["map",[["a","1"],["b","2"],["c","3"]]]}},
 {"op":"insert","table":"Open_vSwitch","uuid":"OVS","row":{"bridges":["uuid","BR0"]}}]`)

// expand fills the fixed UUIDs into a test's JSON.
var expand = strings.NewReplacer("$OVS", uOVS, "$BR0", uBr0, "$P1", uP1, "$P2", uP2, "$P3", uP3, "$BRM", uBrM).Replace

// servers returns the endpoints to test: the embedded database and, for
// comparison, a real ovsdb-server, both seeded.
func servers(t *testing.T) map[string]string {
	db := open(t, shortDir(t), Options{})
	o := lab.StartOVSDB(t)
	eps := map[string]string{"embedded": db.Endpoint(), "ovsdb-server": o.Endpoint}
	for name, ep := range eps {
		res := rawDial(t, ep).transact(seed)
		if got := summary(res); len(got) != 9 || strings.Trim(strings.Join(got, ""), "ok") != "" {
			t.Fatalf("%s: seed: %s", name, res)
		}
	}
	return eps
}

func waitOp(table, where, columns, until, rows string) string {
	return fmt.Sprintf(`{"op":"wait","table":%q,"where":%s,"columns":%s,"until":%q,"rows":%s,"timeout":0}`,
		table, where, columns, until, rows)
}

// TestWait runs transactions with wait operations against the embedded
// database and a real ovsdb-server: both must answer alike, and as the test
// expects.
func TestWait(t *testing.T) {
	br0 := `[["name","==","br0"]]`
	ports := `["ports"]`
	tests := []struct {
		name string
		ops  string
		want []string
	}{
		{"set in another order ==", "[" + waitOp("Bridge", br0, ports, "==", `[{"ports":["set",[["uuid","$P3"],["uuid","$P1"],["uuid","$P2"]]]}]`) + "]",
			[]string{"ok"}},
		{"map in another order ==", "[" + waitOp("Bridge", br0, `["other_config"]`, "==", `[{"other_config":["map",[["c","3"],["a","1"],["b","2"]]]}]`) + "]",
			[]string{"ok"}},
		{"other set ==", "[" + waitOp("Bridge", br0, ports, "==", `[{"ports":["set",[["uuid","$P1"],["uuid","$P2"]]]}]`) + "]",
			[]string{"timed out"}},
		{"other set !=", "[" + waitOp("Bridge", br0, ports, "!=", `[{"ports":["set",[["uuid","$P1"],["uuid","$P2"]]]}]`) + "]",
			[]string{"ok"}},
		{"same set in another order !=", "[" + waitOp("Bridge", br0, ports, "!=", `[{"ports":["set",[["uuid","$P2"],["uuid","$P3"],["uuid","$P1"]]]}]`) + "]",
			[]string{"timed out"}},
		{"other map ==", "[" + waitOp("Bridge", br0, `["other_config"]`, "==", `[{"other_config":["map",[["a","1"],["b","2"]]]}]`) + "]",
			[]string{"timed out"}},
		{"default values, left out ==", "[" + waitOp("Bridge", br0, `["fail_mode","external_ids","stp_enable"]`, "==", `[{}]`) + "]",
			[]string{"ok"}},
		{"default values, written out ==", "[" + waitOp("Bridge", br0, `["fail_mode","external_ids","stp_enable"]`, "==", `[{"fail_mode":["set",[]],"external_ids":["map",[]],"stp_enable":false}]`) + "]",
			[]string{"ok"}},
		{"expected non-default, actual default", "[" + waitOp("Bridge", br0, `["fail_mode"]`, "==", `[{"fail_mode":"secure"}]`) + "]",
			[]string{"timed out"}},
		{"expected default, actual not", "[" + waitOp("Bridge", br0, `["other_config"]`, "==", `[{}]`) + "]",
			[]string{"timed out"}},
		{"no such row ==", "[" + waitOp("Bridge", `[["name","==","nosuch"]]`, `["_uuid"]`, "==", `[]`) + "]",
			[]string{"ok"}},
		{"row exists, none expected", "[" + waitOp("Bridge", br0, `["_uuid"]`, "==", `[]`) + "]",
			[]string{"timed out"}},
		{"several rows in another order", "[" + waitOp("Port", `[]`, `["name"]`, "==", `[{"name":"p3"},{"name":"p1"},{"name":"p2"}]`) + "]",
			[]string{"ok"}},
		{"duplicate expected rows", "[" + waitOp("Port", `[]`, `["name"]`, "==", `[{"name":"p3"},{"name":"p1"},{"name":"p2"},{"name":"p1"}]`) + "]",
			[]string{"ok"}},
		{"subset of the rows", "[" + waitOp("Port", `[]`, `["name"]`, "==", `[{"name":"p1"}]`) + "]",
			[]string{"timed out"}},
		{"subset of the rows !=", "[" + waitOp("Port", `[]`, `["name"]`, "!=", `[{"name":"p1"}]`) + "]",
			[]string{"ok"}},
		{"one-element set as an atom", "[" + waitOp("Open_vSwitch", `[]`, `["bridges"]`, "==", `[{"bridges":["uuid","$BR0"]}]`) + "]",
			[]string{"ok"}},
		{"where on _uuid, columns left out", `[{"op":"wait","table":"Port","where":[["_uuid","==",["uuid","$P1"]]],"until":"==","timeout":0,"rows":[{"name":"p1"}]}]`,
			[]string{"timed out"}},
		{"includes in where", "[" + waitOp("Bridge", `[["ports","includes",["uuid","$P2"]]]`, `["name"]`, "==", `[{"name":"br0"}]`) + "]",
			[]string{"ok"}},
		{"wait sees the transaction's own insert, then abort", `[
			{"op":"insert","table":"Bridge","uuid-name":"x","row":{"name":"brx"}},
			{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["named-uuid","x"]]]},
			` + waitOp("Bridge", `[["_uuid","==",["named-uuid","x"]]]`, `["name"]`, "==", `[{"name":"brx"}]`) + `,
			` + waitOp("Bridge", `[]`, `["name"]`, "==", `[{"name":"brx"},{"name":"br0"}]`) + `,
			{"op":"abort"},
			{"op":"comment","comment":"never"}]`,
			[]string{"ok", "ok", "ok", "ok", "aborted", "null"}},
		{"failed wait after writes rolls them back", `[
			{"op":"insert","table":"Bridge","uuid-name":"y","row":{"name":"bry"}},
			{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["named-uuid","y"]]]},
			` + waitOp("Bridge", `[["name","==","bry"]]`, `["_uuid"]`, "==", `[]`) + `,
			{"op":"comment","comment":"never"}]`,
			[]string{"ok", "ok", "timed out", "null"}},
		{"wait, comment and commit, then a write", "[" + waitOp("Bridge", br0, ports, "==", `[{"ports":["set",[["uuid","$P2"],["uuid","$P1"],["uuid","$P3"]]]}]`) + `,
			{"op":"comment","comment":"hello"},
			{"op":"mutate","table":"Bridge","where":[["name","==","br0"]],"mutations":[["external_ids","insert",["map",[["k","v"]]]]]},
			{"op":"commit","durable":true},
			{"op":"select","table":"Bridge","where":[],"columns":["external_ids","fail_mode"]}]`,
			[]string{"ok", "ok", "ok", "ok", "ok"}},
		{"bad until", `[{"op":"wait","table":"Bridge","where":[],"until":"<","rows":[],"timeout":0}]`,
			[]string{"syntax error"}},
		{"unknown column", "[" + waitOp("Bridge", `[]`, `["nosuch"]`, "==", `[]`) + "]",
			[]string{"syntax error"}},
	}
	eps := servers(t)
	conns := map[string]*rawConn{}
	for name, ep := range eps {
		conns[name] = rawDial(t, ep)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answers := map[string][]json.RawMessage{}
			for name, c := range conns {
				c.t = t
				answers[name] = c.transact(expand(tt.ops))
				if got := summary(answers[name]); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s: got %v, want %v\n%s", name, got, tt.want, answers[name])
				}
			}
			// Select results must match exactly (same rows, same columns).
			if strings.Contains(tt.ops, `"select"`) {
				e, o := answers["embedded"], answers["ovsdb-server"]
				if !jsonEqual(e[len(e)-1], o[len(o)-1]) {
					t.Errorf("select: embedded %s, ovsdb-server %s", e[len(e)-1], o[len(o)-1])
				}
			}
		})
	}
	// Neither the aborted nor the failed transaction left a bridge behind.
	for name, c := range conns {
		c.t = t
		res := c.transact(`[{"op":"select","table":"Bridge","where":[],"columns":["name"]}]`)
		if !jsonEqual(res[0], json.RawMessage(`{"rows":[{"name":"br0"}]}`)) {
			t.Errorf("%s: bridges after the tests: %s", name, res[0])
		}
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// parked returns how many transactions of db wait for a condition.
func parked(db *DB) int {
	db.srv.mu.Lock()
	conns := make([]*conn, 0, len(db.srv.conns))
	for c := range db.srv.conns {
		conns = append(conns, c)
	}
	db.srv.mu.Unlock()
	n := 0
	for _, c := range conns {
		c.pmu.Lock()
		n += len(c.pending)
		c.pmu.Unlock()
	}
	return n
}

// untilParked polls until n transactions are parked.
func untilParked(t *testing.T, db *DB, n int) {
	t.Helper()
	for parked(db) != n {
		select {
		case <-ctxT(t).Done():
			t.Fatalf("never %d parked transactions", n)
		case <-time.After(time.Millisecond):
		}
	}
}

// TestWaitWithTimeout covers waits that do not hold at first: with a
// timeout the transaction waits for a commit that makes the condition true
// (or for the timeout), without one it waits until cancelled; meanwhile the
// server goes on serving, the waiting client's other requests included.
func TestWaitWithTimeout(t *testing.T) {
	db := open(t, shortDir(t), Options{})
	setup := rawDial(t, db.Endpoint())
	setup.transact(seed)
	waiter := rawDial(t, db.Endpoint())
	id := waiter.send("transact", "Open_vSwitch", json.RawMessage(
		`{"op":"wait","table":"Bridge","where":[["name","==","late"]],"columns":["name"],"until":"==","rows":[{"name":"late"}],"timeout":600000}`),
		json.RawMessage(`{"op":"mutate","table":"Bridge","where":[["name","==","late"]],"mutations":[["external_ids","insert",["map",[["seen","yes"]]]]]}`))
	untilParked(t, db, 1)
	// The same connection is still served while its transaction waits.
	if m, _ := waiter.call("echo", "x"); string(m.Result) != `["x"]` {
		t.Fatalf("echo while parked: %s %s", m.Result, m.Error)
	}
	// An unrelated commit does not satisfy the wait.
	setup.transact(`[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["next_cfg","+=",1]]}]`)
	setup.transact(`[{"op":"insert","table":"Bridge","uuid-name":"l","row":{"name":"late"}},
		{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["named-uuid","l"]]]}]`)
	m, _ := waiter.await(id)
	var res []json.RawMessage
	if err := json.Unmarshal(m.Result, &res); err != nil || !reflect.DeepEqual(summary(res), []string{"ok", "ok"}) {
		t.Fatalf("parked transaction: %s %s", m.Result, m.Error)
	}
	got := setup.transact(`[{"op":"select","table":"Bridge","where":[["name","==","late"]],"columns":["external_ids"]}]`)
	if !jsonEqual(got[0], json.RawMessage(`{"rows":[{"external_ids":["map",[["seen","yes"]]]}]}`)) {
		t.Fatalf("the parked transaction's write: %s", got[0])
	}

	t.Run("timeout passes", func(t *testing.T) {
		c := rawDial(t, db.Endpoint())
		res := c.transact(`[{"op":"wait","table":"Bridge","where":[["name","==","never"]],"columns":["name"],"until":"==","rows":[{"name":"never"}],"timeout":1}]`)
		if got := summary(res); !reflect.DeepEqual(got, []string{"timed out"}) {
			t.Fatalf("got %s", res)
		}
	})
	t.Run("no timeout, cancelled", func(t *testing.T) {
		c := rawDial(t, db.Endpoint())
		id := c.send("transact", "Open_vSwitch", json.RawMessage(
			`{"op":"wait","table":"Bridge","where":[["name","==","never"]],"columns":["name"],"until":"==","rows":[{"name":"never"}]}`))
		untilParked(t, db, 1)
		b, _ := json.Marshal(map[string]any{"id": nil, "method": "cancel", "params": []any{id}})
		if _, err := c.nc.Write(b); err != nil {
			t.Fatal(err)
		}
		m, _ := c.await(id)
		if string(m.Error) != `"canceled"` {
			t.Fatalf("cancelled transaction: result %s error %s", m.Result, m.Error)
		}
	})
	t.Run("no timeout, client gone", func(t *testing.T) {
		c := rawDial(t, db.Endpoint())
		c.send("transact", "Open_vSwitch", json.RawMessage(
			`{"op":"wait","table":"Bridge","where":[["name","==","never"]],"columns":["name"],"until":"==","rows":[{"name":"never"}]}`))
		untilParked(t, db, 1)
		c.nc.Close()
		untilParked(t, db, 0)
	})
}

// TestMonitors compares the updates of monitor, monitor_cond (array form,
// as OVS's IDL sends it) and monitor_cond_since with ovsdb-server's: same
// notifications, as notifications (no reply expected), before the reply to
// the transaction; monitor_cancel stops them.
func TestMonitors(t *testing.T) {
	steps := []string{
		`[{"op":"insert","table":"Bridge","uuid":"$BRM","row":{"name":"brm","ports":["uuid","$P1"]}},
		  {"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["uuid","$BRM"]]]}]`,
		`[{"op":"update","table":"Bridge","where":[["name","==","brm"]],"row":{"datapath_type":"netdev","stp_enable":true,"fail_mode":"secure"}}]`,
		`[{"op":"mutate","table":"Bridge","where":[["name","==","brm"]],"mutations":[["ports","insert",["set",[["uuid","$P3"],["uuid","$P2"]]]],
		  ["ports","delete",["uuid","$P1"]],["other_config","insert",["map",[["z","1"],["y","2"]]]]]}]`,
		`[{"op":"update","table":"Bridge","where":[["name","==","brm"]],"row":{"fail_mode":"standalone","other_config":["map",[["y","3"]]]}}]`,
		`[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["next_cfg","+=",1]]}]`,
		`[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","delete",["uuid","$BRM"]]]}]`,
	}
	cols := `["name","ports","datapath_type","stp_enable","fail_mode","other_config"]`
	monitors := []struct{ method, req string }{
		{"monitor", `{"Bridge":{"columns":` + cols + `}}`},
		{"monitor_cond", `{"Bridge":[{"columns":` + cols + `}]}`},
		{"monitor_cond_since", `{"Bridge":[{"columns":` + cols + `}]}`},
		{"monitor_cond", `{"Bridge":[{"columns":["name","ports"],"where":[["name","==","brm"]]}]}`},
		{"monitor", `{"Bridge":{"columns":["name"],"select":{"initial":false,"modify":false}}}`},
	}
	eps := servers(t)
	got := map[string][]string{}
	for name, ep := range eps {
		c := rawDial(t, ep)
		var log []string
		for i, m := range monitors {
			params := []any{"Open_vSwitch", fmt.Sprintf("m%d", i), json.RawMessage(m.req)}
			if m.method == "monitor_cond_since" {
				params = append(params, datum.ZeroUUID)
			}
			r, _ := c.call(m.method, params...)
			log = append(log, fmt.Sprintf("%s reply %s error %s", m.method, canonical(t, r.Result), r.Error))
		}
		for i, step := range steps {
			if i == len(steps)-2 {
				if r, _ := c.call("monitor_cancel", "m0"); string(r.Error) != "null" {
					t.Fatalf("%s: monitor_cancel: %s", name, r.Error)
				}
			}
			list := []any{"Open_vSwitch"}
			var ops []json.RawMessage
			if err := json.Unmarshal([]byte(expand(step)), &ops); err != nil {
				t.Fatal(err)
			}
			for _, op := range ops {
				list = append(list, op)
			}
			r, notes := c.call("transact", list...)
			var res []json.RawMessage
			_ = json.Unmarshal(r.Result, &res)
			log = append(log, fmt.Sprintf("step %d: %v", i, summary(res)))
			// Notifications for different monitors come in no particular order.
			var lines []string
			for _, n := range notes {
				lines = append(lines, fmt.Sprintf("  %s %s", n.Method, canonical(t, n.Params)))
			}
			sort.Strings(lines)
			log = append(log, lines...)
		}
		got[name] = log
	}
	if !reflect.DeepEqual(got["embedded"], got["ovsdb-server"]) {
		t.Fatalf("embedded:\n%s\novsdb-server:\n%s", strings.Join(got["embedded"], "\n"), strings.Join(got["ovsdb-server"], "\n"))
	}
	if len(got["embedded"]) < 15 {
		t.Fatalf("too few notifications:\n%s", strings.Join(got["embedded"], "\n"))
	}
}

// canonical re-encodes JSON with sorted keys.
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestUnknownDatabase: _Server (and any other database but Open_vSwitch)
// gets ovsdb-server's answer for an unknown database, a JSON-RPC error; the
// server logs nothing.
func TestUnknownDatabase(t *testing.T) {
	logs := &warnings{}
	db := open(t, shortDir(t), Options{Logger: slog.New(logs)})
	o := lab.StartOVSDB(t)
	for _, method := range []string{"get_schema", "transact", "monitor_cond"} {
		params := map[string][]any{
			"get_schema":   {"Nope"},
			"transact":     {"Nope", json.RawMessage(`{"op":"select","table":"Database","where":[]}`)},
			"monitor_cond": {"Nope", "m", json.RawMessage(`{"Database":[{}]}`)},
		}[method]
		emb, _ := rawDial(t, db.Endpoint()).call(method, params...)
		real, _ := rawDial(t, o.Endpoint).call(method, params...)
		var e, r struct{ Error string }
		if json.Unmarshal(emb.Error, &e) != nil || json.Unmarshal(real.Error, &r) != nil || e.Error != r.Error || e.Error != "unknown database" {
			t.Errorf("%s: embedded %s, ovsdb-server %s", method, emb.Error, real.Error)
		}
	}
	m, _ := rawDial(t, db.Endpoint()).call("transact", "_Server",
		json.RawMessage(`{"op":"select","table":"Database","where":[["name","==","Open_vSwitch"]],"columns":["model","connected","leader"]}`))
	if !strings.Contains(string(m.Error), "unknown database") {
		t.Errorf("_Server: result %s error %s", m.Result, m.Error)
	}
	if m, _ := rawDial(t, db.Endpoint()).call("list_dbs"); string(m.Result) != `["Open_vSwitch"]` {
		t.Errorf("list_dbs: %s", m.Result)
	}
	if w := logs.get(); len(w) > 0 {
		t.Fatalf("the server logged:\n%s", strings.Join(w, "\n"))
	}
}
