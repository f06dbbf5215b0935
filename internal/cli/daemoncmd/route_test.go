package daemoncmd_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
)

func TestClassify(t *testing.T) {
	const (
		ovsdb  = daemoncmd.RouteOVSDB
		daemon = daemoncmd.RouteDaemon
		refuse = daemoncmd.RouteRefuse
	)
	iface := func(typ string, opts, ids map[string]string) model.Port {
		return model.Port{Name: "v0", Interfaces: []model.Interface{{Name: "v0", Type: typ, Options: opts, ExternalIDs: ids}}}
	}
	for _, tc := range []struct {
		line     string
		kind     daemoncmd.RouteKind
		typ      string
		port     model.Port
		mayExist bool
		why      string
	}{
		// Open vSwitch types, and lines that name no type, stay with ovs-vsctl.
		{line: "add-port br0 v0", kind: ovsdb},
		{line: "add-port br0 v0 -- set Interface v0 type=internal", kind: ovsdb},
		{line: "add-port br0 v0 -- set Interface v0 type=dpdkvhostuserclient options:vhost-server-path=/x", kind: ovsdb},
		{line: "add-port br0 v0 -- set Interface v0 type=", kind: ovsdb},
		{line: `add-port br0 v0 -- set Interface v0 type=""`, kind: ovsdb},
		{line: "add-port br0 v0 -- set Interface v0 type=dummy", kind: ovsdb},
		{line: "add-port br0 v0 -- set Interface v0 type=afxdp-nonpmd", kind: ovsdb},
		{line: "set Interface v0 type=geneve options:remote_ip=10.0.0.1", kind: ovsdb},
		{line: "create QoS type=linux-htb", kind: ovsdb},
		{line: "set Bridge br0 datapath_type=bogus", kind: ovsdb},
		{line: "set Port v0 other_config:type=veth", kind: ovsdb},
		{line: "set Interface v0 options:type=veth", kind: ovsdb},
		{line: "set Interface v0 type!=veth", kind: ovsdb},
		{line: "set i v0 type=veth", kind: ovsdb}, // "i" is ambiguous (IPFIX, Interface): ovs-vsctl's error
		{line: "find Interface type=veth", kind: ovsdb},
		{line: "--help", kind: ovsdb},
		{line: "add-port br0", kind: ovsdb},
		{line: "--nosuchoption add-port br0 v0 -- set Interface v0 type=veth", kind: ovsdb},
		// The routed shape.
		{line: "add-port br0 v0 -- set Interface v0 type=veth", kind: daemon, typ: "veth", port: iface("veth", nil, nil)},
		{line: "--may-exist add-port br0 v0 -- set Interface v0 type=veth", kind: daemon, typ: "veth", port: iface("veth", nil, nil), mayExist: true},
		{line: "-t 5 --no-wait -- --may-exist add-port br0 v0 -- set interface v0 TYPE=veth", kind: daemon, typ: "veth", port: iface("veth", nil, nil), mayExist: true},
		{line: `--db=unix:/x add-port br0 v0 -- set Interf v0 typ="veth" options:peer=v0-ns options:"ns"="red" external_ids:iface-id=abc options:peer=v1`,
			kind: daemon, typ: "veth",
			port: iface("veth", map[string]string{"peer": "v1", "ns": "red"}, map[string]string{"iface-id": "abc"})},
		{line: "add-port br0 v0 -- set Interface v0 options:a=1 type=vdpa", kind: daemon, typ: "vdpa", port: iface("vdpa", map[string]string{"a": "1"}, nil)},
		// Everything else with a type outside Open vSwitch's is refused.
		{line: "set Interface v0 type=veth", kind: refuse, typ: "veth", why: "must be added alone"},
		{line: "create Interface name=v0 type=veth", kind: refuse, typ: "veth", why: "must be added alone"},
		{line: "add-br br1 -- add-port br1 v0 -- set Interface v0 type=veth", kind: refuse, typ: "veth", why: "must be added alone"},
		{line: "add-port br0 v0 -- set Interface v0 type=veth -- list-br", kind: refuse, typ: "veth", why: "must be added alone"},
		{line: "add-bond br1 lag2 x0 x1 -- set Interface x0 type=veth", kind: refuse, typ: "veth", why: "must be added alone"},
		{line: "add-port br0 v0 -- set Interface v1 type=veth", kind: refuse, typ: "veth", why: "must be added alone"},
		{line: "add-port br0 v0 tag=5 -- set Interface v0 type=veth", kind: refuse, typ: "veth", why: "must be added alone"},
		{line: "add-port br0 v0 -- set Interface v0 type=veth mtu_request=9000", kind: refuse, typ: "veth", why: `"mtu_request=9000" cannot be set`},
		{line: "add-port br0 v0 -- set Interface v0 type=veth other_config:x=y", kind: refuse, typ: "veth", why: `"other_config:x=y" cannot be set`},
		{line: "add-port br0 v0 -- --if-exists set Interface v0 type=veth", kind: refuse, typ: "veth", why: "must be added alone"},
		{line: "--dry-run add-port br0 v0 -- set Interface v0 type=veth", kind: refuse, typ: "veth", why: "--dry-run"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			args, err := splitWords(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			r := daemoncmd.Classify(args)
			if r.Kind != tc.kind || r.Type != tc.typ || r.MayExist != tc.mayExist || !strings.Contains(r.Why, tc.why) {
				t.Errorf("Classify = %+v; want kind %d, type %q, may-exist %v, why containing %q", r, tc.kind, tc.typ, tc.mayExist, tc.why)
			}
			if tc.kind == daemon && (r.Bridge != "br0" || !reflect.DeepEqual(r.Port, tc.port)) {
				t.Errorf("bridge %q port %+v; want br0 %+v", r.Bridge, r.Port, tc.port)
			}
		})
	}
}

// splitWords splits a command line like a POSIX shell for the cases above (single and
// double quotes).
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
			if c == '"' {
				cur.WriteByte(c)
			}
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'':
			quote, in = c, true
		case c == '"':
			quote, in = c, true
			cur.WriteByte(c)
		case c == ' ':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// routePort runs RoutePort with the environment env and the command line args.
func routePort(t *testing.T, env map[string]string, stat func(string) (fs.FileInfo, error), args ...string) (result, bool) {
	t.Helper()
	var out, errb bytes.Buffer
	code, handled := daemoncmd.RoutePort(t.Context(), daemoncmd.Env{
		Args:   append([]string{"vsctl"}, args...),
		Getenv: func(k string) string { return env[k] },
		Stdout: &out, Stderr: &errb, Stat: stat,
	})
	return result{code, out.String(), errb.String()}, handled
}

func words(t *testing.T, line string) []string {
	t.Helper()
	w, err := splitWords(line)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestRoutePort(t *testing.T) {
	fake, addr := serve(t)
	if _, err := fake.ApplyBridge(t.Context(), model.Bridge{Name: "br0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.ApplyBridge(t.Context(), model.Bridge{Name: "br1"}); err != nil {
		t.Fatal(err)
	}
	fake.SetPlugins([]model.PluginInfo{
		{Name: "veth", State: "running", Types: []string{"veth"}},
		{Name: "stripe", State: "failed", Types: []string{"stripe"}, Reason: "circuit breaker open"},
	})
	env := map[string]string{"OVSPLANE_API": addr, "OVS_LOGDIR": "/tmp/ovslog"}
	port := func(t *testing.T, name string) model.PortInfo {
		t.Helper()
		p, err := fake.Port(name)
		if err != nil {
			t.Fatalf("port %s: %v", name, err)
		}
		return p
	}

	t.Run("add", func(t *testing.T) {
		r, handled := routePort(t, env, nil, words(t, "add-port br0 v0 -- set Interface v0 type=veth options:peer=ns0 external_ids:iface-id=a")...)
		if !handled || r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Fatalf("handled %v, exit %d, stdout %q, stderr %q; want silent success", handled, r.code, r.stdout, r.stderr)
		}
		want := model.Port{Name: "v0", Interfaces: []model.Interface{{Name: "v0", Type: "veth",
			Options: map[string]string{"peer": "ns0"}, ExternalIDs: map[string]string{"iface-id": "a"}}}}
		if p := port(t, "v0"); p.Bridge != "br0" || !reflect.DeepEqual(p.Spec, want) {
			t.Errorf("the daemon got %s %+v; want br0 %+v", p.Bridge, p.Spec, want)
		}
	})
	t.Run("add again", func(t *testing.T) {
		r, _ := routePort(t, env, nil, words(t, "add-port br0 v0 -- set Interface v0 type=veth")...)
		if r.code != 1 || r.stderr != "vsctl: cannot create a port named v0 because a port named v0 already exists on bridge br0\n" {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("may-exist merges keys", func(t *testing.T) {
		r, _ := routePort(t, env, nil, words(t, "--may-exist add-port br0 v0 -- set Interface v0 type=veth options:ns=red")...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		in := port(t, "v0").Spec.Interfaces[0]
		if !reflect.DeepEqual(in.Options, map[string]string{"peer": "ns0", "ns": "red"}) || in.ExternalIDs["iface-id"] != "a" {
			t.Errorf("interface after --may-exist: %+v", in)
		}
	})
	t.Run("may-exist on another bridge", func(t *testing.T) {
		r, _ := routePort(t, env, nil, words(t, "--may-exist add-port br1 v0 -- set Interface v0 type=veth")...)
		if r.code != 1 || r.stderr != "vsctl: \"--may-exist add-port br1 v0\" but v0 is actually attached to bridge br0\n" {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("may-exist on a bond", func(t *testing.T) {
		if _, err := fake.ApplyPort(t.Context(), "br0", model.Port{Name: "b0", Interfaces: []model.Interface{{Name: "x1"}, {Name: "x0"}}}); err != nil {
			t.Fatal(err)
		}
		r, _ := routePort(t, env, nil, words(t, "--may-exist add-port br0 b0 -- set Interface b0 type=veth")...)
		if r.code != 1 || r.stderr != "vsctl: \"--may-exist add-port br0 b0\" but b0 actually has interface(s) x0, x1\n" {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("no plugin provides the type", func(t *testing.T) {
		r, handled := routePort(t, env, nil, words(t, "add-port br0 v9 -- set Interface v9 type=vteth")...)
		if !handled || r.code != 1 || !strings.HasPrefix(r.stderr, "vsctl: ") ||
			!strings.Contains(r.stderr, `unknown interface type "vteth" (no plugin provides it)`) {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
		if _, err := fake.Port("v9"); err == nil {
			t.Error("v9 was added")
		}
	})
	t.Run("plugin not running", func(t *testing.T) {
		r, _ := routePort(t, env, nil, words(t, "add-port br0 s0 -- set Interface s0 type=stripe")...)
		if r.code != 1 || !strings.Contains(r.stderr, `plugin "stripe"`) || !strings.Contains(r.stderr, "circuit breaker open") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("interface error is ovs-vsctl's warning", func(t *testing.T) {
		r, _ := routePort(t, env, nil, words(t, "add-port br0 v1 -- set Interface v1 type=veth options:"+apitest.RefuseOption+"=could_not_open")...)
		want := "vsctl: Error detected while setting up 'v1': could_not_open.  See ovs-vswitchd log for details.\n" +
			"vsctl: The default log directory is \"/tmp/ovslog\".\n"
		if r.code != 0 || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want 0, %q", r.code, r.stderr, want)
		}
	})
	t.Run("mixed commands", func(t *testing.T) {
		r, handled := routePort(t, env, nil, words(t, "add-port br0 v2 -- set Interface v2 type=veth -- set Port v2 tag=5")...)
		if !handled || r.code != 1 || !strings.Contains(r.stderr, `vsctl: interface type "veth" is not an Open vSwitch type: ports of a plugin's type must be added alone: add-port BRIDGE PORT -- set Interface PORT type=TYPE`) {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
		if _, err := fake.Port("v2"); err == nil {
			t.Error("v2 was added")
		}
	})
	t.Run("Open vSwitch types are not handled", func(t *testing.T) {
		if _, handled := routePort(t, env, nil, words(t, "add-port br0 p0 -- set Interface p0 type=internal")...); handled {
			t.Error("handled")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		fake.SetApplyDelay(3 * time.Second)
		defer fake.SetApplyDelay(0)
		start := time.Now()
		r, _ := routePort(t, env, nil, words(t, "-t 1 add-port br0 v3 -- set Interface v3 type=veth")...)
		if r.code != 1 || time.Since(start) > 2500*time.Millisecond || !strings.Contains(r.stderr, "deadline") {
			t.Errorf("exit %d after %v, stderr %q", r.code, time.Since(start), r.stderr)
		}
	})
}

func TestRoutePortDaemonDown(t *testing.T) {
	dir := t.TempDir()
	sock := dir + "/ovsplaned.sock"
	line := "add-port br0 v0 -- set Interface v0 type=veth"
	t.Run("address given", func(t *testing.T) {
		r, handled := routePort(t, map[string]string{"OVSPLANE_API": "unix:" + sock}, nil, words(t, line)...)
		want := `vsctl: interface type "veth" is not an Open vSwitch type; if a plugin provides it, ovsplaned must be running (cannot reach it at unix:` +
			sock + `: dial unix ` + sock + `: connect: no such file or directory); nothing was written` + "\n"
		if !handled || r.code != 1 || r.stderr != want {
			t.Errorf("handled %v, exit %d, stderr:\n%q\nwant:\n%q", handled, r.code, r.stderr, want)
		}
	})
	t.Run("default socket exists", func(t *testing.T) {
		stat := func(name string) (fs.FileInfo, error) {
			if name != "/var/lib/ovsplane/ovsplaned.sock" {
				t.Errorf("stat %q", name)
			}
			return os.Stat(dir)
		}
		r, handled := routePort(t, nil, stat, words(t, line)...)
		if !handled || r.code != 1 || !strings.Contains(r.stderr, "ovsplaned must be running (cannot reach it at unix:/var/lib/ovsplane/ovsplaned.sock: ") {
			t.Errorf("handled %v, exit %d, stderr %q", handled, r.code, r.stderr)
		}
	})
	t.Run("no daemon found", func(t *testing.T) {
		// Issue 14: not ovs-vsctl's semantics (a row of an unknown type, exit 0) but a refusal
		// naming the type and the fix, for every shape.
		stat := func(string) (fs.FileInfo, error) { return nil, fs.ErrNotExist }
		for _, l := range []string{line, "set Interface v0 type=veth", "add-bond br1 lag2 x0 x1 -- set Interface x0 type=veth"} {
			r, handled := routePort(t, nil, stat, words(t, l)...)
			if !handled || r.code != 1 || !strings.HasPrefix(r.stderr, `vsctl: interface type "veth" is not an Open vSwitch type`) ||
				!strings.Contains(r.stderr, "no ovsplaned was found") || !strings.Contains(r.stderr, "nothing was written") ||
				!strings.Contains(r.stderr, "--daemon=unix:DATA_DIR/ovsplaned.sock") || !strings.Contains(r.stderr, "$OVSPLANE_API") {
				t.Errorf("%s: handled %v, exit %d, stderr %q", l, handled, r.code, r.stderr)
			}
		}
	})
	t.Run("--daemon wins", func(t *testing.T) {
		stat := func(string) (fs.FileInfo, error) { return nil, fs.ErrNotExist }
		var errb bytes.Buffer
		code, handled := daemoncmd.RoutePort(t.Context(), daemoncmd.Env{
			Args:   append([]string{"vsctl"}, words(t, line)...),
			Getenv: func(k string) string { return map[string]string{"OVSPLANE_API": "unix:/nowhere/else.sock"}[k] },
			Stderr: &errb, Stat: stat, Daemon: "unix:" + sock,
		})
		if !handled || code != 1 || !strings.Contains(errb.String(), "cannot reach it at unix:"+sock) {
			t.Errorf("handled %v, exit %d, stderr %q", handled, code, errb.String())
		}
	})
	t.Run("refusals need no daemon", func(t *testing.T) {
		r, _ := routePort(t, map[string]string{"OVSPLANE_API": "unix:" + sock}, nil, words(t, "set Interface v0 type=veth")...)
		if r.code != 1 || !strings.Contains(r.stderr, "must be added alone") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// TestRoutePortAsksOVS: a type outside the stock list that the running ovs-vswitchd lists is
// Open vSwitch's (a newer version's): the line is ovs-vsctl's. The types are asked for only
// when the line names such a type, and do not decide when they cannot be read.
func TestRoutePortAsksOVS(t *testing.T) {
	noDaemon := func(string) (fs.FileInfo, error) { return nil, fs.ErrNotExist }
	var stderr bytes.Buffer
	run := func(types []string, err error, line string) (calls int, code int, handled bool) {
		stderr.Reset()
		code, handled = daemoncmd.RoutePort(t.Context(), daemoncmd.Env{
			Args: append([]string{"vsctl"}, words(t, line)...), Stderr: &stderr, Stat: noDaemon,
			IfaceTypes: func(ctx context.Context) ([]string, error) {
				calls++
				if _, ok := ctx.Deadline(); !ok {
					t.Error("IfaceTypes without a deadline")
				}
				return types, err
			},
		})
		return calls, code, handled
	}
	newer := []string{"system", "internal", "srv7"}
	if calls, _, handled := run(newer, nil, "add-port br0 v0 -- set Interface v0 type=srv7"); handled || calls != 1 {
		t.Errorf("a type the running OVS has: handled %v after %d look-ups", handled, calls)
	}
	if calls, code, handled := run(newer, nil, "add-port br0 v0 -- set Interface v0 type=veth"); !handled || code != 1 || calls != 1 ||
		!strings.Contains(stderr.String(), "this ovs-vswitchd does not list it") {
		t.Errorf("a type it lacks: handled %v, exit %d after %d look-ups, stderr %q", handled, code, calls, stderr.String())
	}
	if calls, code, handled := run(newer, nil, "add-port br0 v0 -- set Interface v0 type=srv7 -- set Interface v1 type=veth"); !handled || code != 1 || calls != 1 {
		t.Errorf("one type it has and one it lacks: handled %v, exit %d after %d look-ups", handled, code, calls)
	}
	if calls, code, handled := run(nil, errors.New("no database"), "add-port br0 v0 -- set Interface v0 type=srv7"); !handled || code != 1 || calls != 1 ||
		!strings.Contains(stderr.String(), "iface_types could not be read: no database") {
		t.Errorf("types unreadable: handled %v, exit %d after %d look-ups, stderr %q", handled, code, calls, stderr.String())
	}
	if calls, _, handled := run(newer, nil, "add-port br0 v0 -- set Interface v0 type=internal"); handled || calls != 0 {
		t.Errorf("a stock type: handled %v after %d look-ups, want none", handled, calls)
	}
}

func TestCutDaemon(t *testing.T) {
	for _, tc := range []struct {
		line, addr, rest string
		err              bool
	}{
		{line: "--daemon=unix:/x add-port br0 p0", addr: "unix:/x", rest: "add-port br0 p0"},
		{line: "--daemon unix:/x -t 5 --may-exist add-port br0 p0", addr: "unix:/x", rest: "-t 5 --may-exist add-port br0 p0"},
		{line: "-t 5 --db unix:/db --daemon=tcp:h:1 --da=json list Bridge", addr: "tcp:h:1", rest: "-t 5 --db unix:/db --da=json list Bridge"},
		{line: "--daemon=a --daemon=b show", addr: "b", rest: "show"},
		{line: "add-port br0 p0 -- set Interface p0 external_ids:x=--daemon=y", rest: "add-port br0 p0 -- set Interface p0 external_ids:x=--daemon=y"},
		{line: "show --daemon=x", rest: "show --daemon=x"},
		{line: "-- --daemon=x show", rest: "-- --daemon=x show"},
		{line: "--bogus --daemon=x show", rest: "--bogus --daemon=x show"},
		{line: "show", rest: "show"},
		{line: "--daemon=", err: true},
		{line: "--daemon", err: true},
	} {
		addr, rest, err := daemoncmd.CutDaemon(append([]string{"vsctl"}, strings.Fields(tc.line)...))
		if tc.err {
			if err == nil {
				t.Errorf("%q: no error", tc.line)
			}
			continue
		}
		if err != nil || addr != tc.addr || rest[0] != "vsctl" || strings.Join(rest[1:], " ") != tc.rest {
			t.Errorf("%q: %q, %q, %v; want %q, %q", tc.line, addr, rest, err, tc.addr, tc.rest)
		}
	}
}
