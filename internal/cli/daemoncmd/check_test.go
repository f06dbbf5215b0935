package daemoncmd_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
)

// TestRoutePortChecksBeforeSending (issue 12 items 2 and 3): a routed add-port the daemon would
// refuse — a name OVS refuses or that hides an invisible character, a NUL or an oversized
// value — is refused by vsctl itself with the daemon's message naming the object and the fix,
// and nothing reaches the daemon (the fake backend does not validate, so a port sent would
// exist there).
func TestRoutePortChecksBeforeSending(t *testing.T) {
	fake, addr := serve(t)
	if _, err := fake.ApplyBridge(t.Context(), model.Bridge{Name: "br0"}); err != nil {
		t.Fatal(err)
	}
	fake.SetPlugins([]model.PluginInfo{{Name: "veth", State: "running", Types: []string{"veth"}}})
	env := map[string]string{"OVSPLANE_API": addr}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a:b", []string{"add-port", "br0", "a:b", "--", "set", "Interface", "a:b", "type=veth"},
			`vsctl: port "a:b": name: contains ':' at byte 1`},
		{"..", []string{"add-port", "br0", "..", "--", "set", "Interface", "..", "type=veth"},
			`vsctl: port "..": name: "." and ".." are not device names`},
		{"v\u200b0", []string{"add-port", "br0", "v\u200b0", "--", "set", "Interface", "v\u200b0", "type=veth"},
			`vsctl: port "v\u200b0": name: contains U+200B (an invisible format character) at byte 1: it looks like another name; remove it`},
		{"v1", []string{"add-port", "br0", "v1", "--", "set", "Interface", "v1", "type=veth", "external_ids:k=" + strings.Repeat("x", 5000)},
			`vsctl: interface "v1": external_ids key "k": value is 5000 bytes, more than 4096 (limits.MaxValueBytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, handled := routePort(t, env, nil, tc.args...)
			if !handled || r.code != 1 || !strings.HasPrefix(r.stderr, tc.want) {
				t.Fatalf("handled %v, exit %d, stderr %q; want exit 1 and %q", handled, r.code, r.stderr, tc.want)
			}
			if _, err := fake.Port(tc.name); err == nil {
				t.Fatalf("port %q reached the daemon", tc.name)
			}
		})
	}
}

// TestApplyChecksLimits: `vsctl apply -f` refuses a file the daemon would refuse (names, bytes
// and sizes of package limits) before sending anything.
func TestApplyChecksLimits(t *testing.T) {
	fake, addr := serve(t)
	for _, tc := range []struct{ name, content, want string }{
		{"colon", "bridges:\n  - name: br0\n    ports:\n      - name: \"a:b\"\n        interfaces: [{name: ab, type: internal}]\n",
			`bridges[0].ports[0].name: port "a:b": name: contains ':' at byte 1`},
		{"zero width", "bridges:\n  - name: \"br\\u200b0\"\n", `bridges[0].name: bridge "br\u200b0": name: contains U+200B`},
		{"NUL", "bridges:\n  - name: br0\n    external_ids: {k: \"a\\0b\"}\n", `bridges[0].external_ids: bridge "br0": external_ids key "k": value: NUL byte at byte 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, false, "--daemon="+addr, "apply", "-f", writeFile(t, tc.content))
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, tc.want)
			}
		})
	}
	if len(fake.Bridges()) != 0 {
		t.Errorf("refused files applied bridges: %v", fake.Bridges())
	}
}
