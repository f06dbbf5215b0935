package vsctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/internal/cli/vsctl"
	"github.com/ovsplane/ovsplane/ovsdb/embedded"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
)

// argSep separates the arguments of a fuzzed command line (no C argument can hold a NUL, so
// no real command line is lost by the split).
const argSep = "\x00"

// FuzzVsctlArgs runs arbitrary command lines through vsctl's Main — parsing, prerequisites,
// commands, commit, outputs, waiting for ovs-vswitchd — against the embedded OVSDB with the
// simulated ovs-vswitchd, in process. It checks that nothing panics, that the exit status is
// one ovs-vsctl documents (0, 1 on errors with a message on stderr, 2 for br-exists, 142 for a
// timeout), that the output stays proportionate, and that a command line that failed (status
// 1 or 2) left the database exactly as it was: commands run all or nothing.
//
// Command lines that would leave the sandbox are skipped: another --db, a --log-file, SSL
// files. The database is put back to its initial contents after every command line.
func FuzzVsctlArgs(f *testing.F) {
	for _, line := range vsctlSeeds {
		f.Add(strings.Join(line, argSep))
	}
	env := newVsctlEnv(f)
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, argSep)
		if inv, err := cli.Parse(args); err == nil {
			o := inv.Options
			if o.HasDB || o.HasLogFile || o.PrivateKey != "" || o.Certificate != "" || o.CACert != "" ||
				o.BootstrapCACert != "" || o.PeerCACert != "" {
				return
			}
		}
		before := ovsdbtest.MustDump(t, env.db.Endpoint())
		// A safety net against commands that wait (wait-until, a paused ovs-vswitchd): the
		// run ends with status 142 as with -t; not a timing assertion.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var stdout, stderr bytes.Buffer
		code := vsctl.Main(ctx, vsctl.Env{
			Args:   append([]string{"ovs-vsctl"}, args...),
			Getenv: env.getenv,
			Stdout: &stdout, Stderr: &stderr,
		})
		switch code {
		case 0, 2, 142:
		case 1:
			if stderr.Len() == 0 {
				t.Fatalf("%.1000q: status 1 without a message", args)
			}
		default:
			t.Fatalf("%.1000q: status %d\nstdout: %.2000s\nstderr: %.2000s", args, code, stdout.Bytes(), stderr.Bytes())
		}
		if n, limit := stdout.Len()+stderr.Len(), 1<<20+64*len(line); n > limit {
			t.Fatalf("%.1000q: %d bytes of output (limit %d)", args, n, limit)
		}
		if code == 142 || code == 0 && slices.Contains(args, "--no-wait") {
			// The safety net cut the run, perhaps with its transaction still in flight on
			// the server (a loaded machine), or the run did not wait for the simulated
			// ovs-vswitchd: let both land before the database is compared and restored, or
			// they would land during the next command line.
			env.settle(t)
		}
		after := ovsdbtest.MustDump(t, env.db.Endpoint())
		if (code == 1 || code == 2) && !reflect.DeepEqual(before, after) {
			t.Fatalf("%.1000q failed with status %d (%.1000s) but changed the database:\n%.4000s", args, code, stderr.Bytes(), before.Diff(after))
		}
		env.restore(t, after)
	})
}

type vsctlEnv struct {
	db      *embedded.DB
	rundir  string
	initial ovsdbtest.Snapshot
	ovsRow  map[string]any // the Open_vSwitch row's initial columns, for restore
}

func newVsctlEnv(tb testing.TB) *vsctlEnv {
	tb.Helper()
	// A short directory: the embedded server's unix socket path must fit 107 bytes.
	dir, err := os.MkdirTemp("", "ovsplane-fuzz")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := &vsctlEnv{rundir: dir}
	e.db, err = embedded.Open(ctx, dir, embedded.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.db.Close() })
	sim, err := simvswitchd.New(ctx, simvswitchd.Config{Endpoint: e.db.Endpoint()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(sim.Close)
	// The database as after `ovs-vsctl init`, acknowledged by the simulated ovs-vswitchd.
	var stderr bytes.Buffer
	if code := vsctl.Main(ctx, vsctl.Env{Args: []string{"ovs-vsctl", "init"}, Getenv: e.getenv,
		Stdout: &stderr, Stderr: &stderr}); code != 0 {
		tb.Fatalf("init: status %d: %s", code, stderr.Bytes())
	}
	e.initial = ovsdbtest.MustDump(tb, e.db.Endpoint())
	if len(e.initial["Open_vSwitch"]) != 1 {
		tb.Fatalf("Open_vSwitch rows after init: %v", e.initial["Open_vSwitch"])
	}
	if err := json.Unmarshal([]byte(e.initial["Open_vSwitch"][0]), &e.ovsRow); err != nil {
		tb.Fatal(err)
	}
	return e
}

// settle waits until the database stops changing: three dumps in a row, 100ms apart, are
// equal (at most a minute; the simulated ovs-vswitchd acknowledges within that).
func (e *vsctlEnv) settle(t *testing.T) {
	t.Helper()
	prev, same := ovsdbtest.MustDump(t, e.db.Endpoint()), 0
	for deadline := time.Now().Add(time.Minute); same < 2 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		now := ovsdbtest.MustDump(t, e.db.Endpoint())
		if reflect.DeepEqual(prev, now) {
			same++
		} else {
			prev, same = now, 0
		}
	}
}

// getenv is the environment the fuzzed runs see: only OVS_RUNDIR, the embedded database's
// directory (so the default --db is its socket).
func (e *vsctlEnv) getenv(name string) string {
	if name == "OVS_RUNDIR" {
		return e.rundir
	}
	return ""
}

// restore puts the database back to its initial contents (given its current dump): the
// Open_vSwitch row's columns as they were, no rows in the other root tables; the rest is
// garbage collected. next_cfg and cur_cfg only grow.
func (e *vsctlEnv) restore(t *testing.T, now ovsdbtest.Snapshot) {
	t.Helper()
	same := true
	for tbl := range mergeKeys(now, e.initial) {
		if tbl != "Open_vSwitch" && !reflect.DeepEqual(now[tbl], e.initial[tbl]) {
			same = false
		}
	}
	var ovs map[string]any
	if len(now["Open_vSwitch"]) == 1 {
		if err := json.Unmarshal([]byte(now["Open_vSwitch"][0]), &ovs); err != nil {
			t.Fatal(err)
		}
	}
	row := map[string]any{}
	for col, v := range e.ovsRow {
		switch col {
		case "_uuid", "next_cfg", "cur_cfg":
			continue
		}
		row[col] = v
		if !reflect.DeepEqual(ovs[col], v) {
			same = false
		}
	}
	if same && ovs != nil {
		return
	}
	// Two transactions: the bridges (and the ports referring to QoS rows) go first.
	var ops []any
	replaced := ovs == nil || !reflect.DeepEqual(ovs["_uuid"], e.ovsRow["_uuid"])
	if replaced { // destroyed (destroy Open_vSwitch .) or replaced: a new one, as it was
		row["next_cfg"], row["cur_cfg"] = e.ovsRow["next_cfg"], e.ovsRow["cur_cfg"]
		ops = append(ops, map[string]any{"op": "delete", "table": "Open_vSwitch", "where": []any{}},
			map[string]any{"op": "insert", "table": "Open_vSwitch", "row": row})
	} else {
		ops = append(ops, map[string]any{"op": "update", "table": "Open_vSwitch", "where": []any{}, "row": row})
	}
	if err := ovsdbtest.Transact(e.db.Endpoint(), ops, nil); err != nil {
		t.Fatalf("restore: %v", err)
	}
	ops = ops[:0]
	for _, tbl := range []string{"Flow_Sample_Collector_Set", "QoS", "Queue"} {
		ops = append(ops, map[string]any{"op": "delete", "table": tbl, "where": []any{}})
	}
	if err := ovsdbtest.Transact(e.db.Endpoint(), ops, nil); err != nil {
		t.Fatalf("restore: %v", err)
	}
	got := ovsdbtest.MustDump(t, e.db.Endpoint())
	if replaced { // the new row's UUID is the baseline from now on
		if len(got["Open_vSwitch"]) != 1 {
			t.Fatalf("restore: Open_vSwitch rows %.2000v", got["Open_vSwitch"])
		}
		var fresh map[string]any
		if err := json.Unmarshal([]byte(got["Open_vSwitch"][0]), &fresh); err != nil {
			t.Fatal(err)
		}
		e.ovsRow["_uuid"] = fresh["_uuid"]
		b, err := json.Marshal(e.ovsRow)
		if err != nil {
			t.Fatal(err)
		}
		e.initial["Open_vSwitch"] = []string{string(b)}
	}
	if !sameExceptCfg(got, e.initial) {
		t.Fatalf("restore left:\n%.4000s", e.initial.Diff(got))
	}
}

// sameExceptCfg compares two dumps, ignoring Open_vSwitch's next_cfg and cur_cfg.
func sameExceptCfg(a, b map[string][]string) bool {
	strip := func(d map[string][]string) map[string][]string {
		out := map[string][]string{}
		for tbl, rows := range d {
			out[tbl] = rows
		}
		var ovs []string
		for _, r := range d["Open_vSwitch"] {
			var m map[string]any
			if json.Unmarshal([]byte(r), &m) == nil {
				delete(m, "next_cfg")
				delete(m, "cur_cfg")
				b, _ := json.Marshal(m)
				r = string(b)
			}
			ovs = append(ovs, r)
		}
		out["Open_vSwitch"] = ovs
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

func mergeKeys(a, b map[string][]string) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// vsctlSeeds are command lines over every kind of command; the hostile ones (huge numbers,
// NUL, invalid UTF-8, "." and ".." names, deep nesting of values) are in
// testdata/fuzz/FuzzVsctlArgs.
var vsctlSeeds = [][]string{
	{"show"},
	{"add-br", "br0"},
	{"add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "Interface", "p1", "type=internal"},
	{"--may-exist", "add-br", "br0", "--", "add-port", "br0", "p1", "tag=5", "trunks=1,2"},
	{"add-br", "br0", "--", "add-bond", "br0", "b1", "i1", "i2", "--", "add-br", "vl9", "br0", "9", "--", "list-ports", "br0"},
	{"add-port", "nobr", "p1"},
	{"del-br", "nobr"},
	{"--if-exists", "del-br", "nobr"},
	{"br-exists", "nobr"},
	{"add-br", "br0", "--", "br-exists", "br0"},
	{"add-br", "br0", "--", "add-port", "br0", "p1", "--", "add-port", "br0", "p1"},
	{"add-br", "br0", "--", "set", "Bridge", "br0", "other_config:hwaddr=02:00:00:00:00:01", "--", "get", "Bridge", "br0", "other_config"},
	{"add-br", "br0", "--", "set", "Bridge", "br0", "fail_mode=bogus"},
	{"--id=@q", "create", "QoS", "type=linux-htb", "--", "add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "Port", "p1", "qos=@q"},
	{"--id=@q", "create", "QoS", "type=linux-htb"},
	{"--id=@x", "create", "Controller", "target=tcp:1.2.3.4:6653"},
	{"set", "Open_vSwitch", ".", "other_config:dpdk-init=true"},
	{"remove", "Open_vSwitch", ".", "other_config", "dpdk-init"},
	{"clear", "Open_vSwitch", ".", "external_ids"},
	{"add", "Open_vSwitch", ".", "external_ids", "a=b", "--", "get", "Open_vSwitch", ".", "external_ids:a"},
	{"--columns=name,ofport", "find", "Interface", "type=internal"},
	{"--format=json", "list", "Open_vSwitch"},
	{"--format=table", "--data=bare", "--no-headings", "list", "Bridge"},
	{"destroy", "QoS", "@nope"},
	{"--all", "destroy", "QoS"},
	{"add-br", "br0", "--", "set-controller", "br0", "tcp:127.0.0.1:6653", "--", "get-controller", "br0", "--", "del-controller", "br0"},
	{"add-br", "br0", "--", "set-fail-mode", "br0", "secure", "--", "get-fail-mode", "br0", "--", "set-manager", "ptcp:6640"},
	{"set-ssl", "/k", "/c", "/ca", "--", "get-ssl", "--", "del-ssl"},
	{"emer-reset"},
	{"--dry-run", "--no-wait", "add-br", "br0"}, // without --no-wait it waits for good, as ovs-vsctl 3.1 does
	{"--no-wait", "add-br", "br0", "--", "iface-to-br", "br0", "--", "port-to-br", "br0", "--", "br-to-vlan", "br0", "--", "br-to-parent", "br0"},
	{"--timeout=1", "wait-until", "Open_vSwitch", ".", "cur_cfg>=0"}, // holds at once
	{"--help"},
	{"--version"},
	{"list-commands"},
	{"--options"},
	{"--bogus"},
	{"-v", "--oneline", "list-br"},
	{"add-br", "br0", "--", "add-zone-tp", "netdev", "zone=1", "icmp_first=10", "--", "list-zone-tp", "netdev"},
	{"add-aa-mapping", "br0", "1", "2"},
	{"comment", "hello", "--", "get", "Open_vSwitch", ".", "cur_cfg"},
}
