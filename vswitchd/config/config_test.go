package config

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

func load(t *testing.T, doc string, env []string, args ...string) (*Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("flags: %v", err)
	}
	return Load(context.Background(), Options{File: "test.yaml", Data: []byte(doc), Env: env, Flags: fs})
}

func mustLoad(t *testing.T, doc string, env []string, args ...string) *Config {
	t.Helper()
	c, err := load(t, doc, env, args...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// problems returns the problem lines of a Load error (without the "source: N problem(s):" head).
func problems(err error) []string {
	lines := strings.Split(err.Error(), "\n")
	return lines[1:]
}

func TestDefaults(t *testing.T) {
	c := mustLoad(t, "", nil)
	want := &Config{
		DataDir:   "/var/lib/ovsplane",
		API:       API{Listen: []string{"unix:/var/lib/ovsplane/ovsplaned.sock"}, SocketMode: "0660"},
		Log:       Log{Level: "info", Format: "text"},
		PluginDir: "/var/lib/ovsplane/plugins",
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	// Derived defaults follow the data dir.
	c = mustLoad(t, "data_dir: /srv/ovs\n", nil)
	if c.API.Listen[0] != "unix:/srv/ovs/ovsplaned.sock" || c.PluginDir != "/srv/ovs/plugins" {
		t.Fatalf("derived defaults: %+v %q", c.API.Listen, c.PluginDir)
	}
	// Null means unset.
	c = mustLoad(t, "log:\n  level: null\napi:\n", nil)
	if c.Log.Level != "info" {
		t.Fatalf("null level: %q", c.Log.Level)
	}
}

func TestPrecedence(t *testing.T) {
	file := "log:\n  level: debug\novsdb:\n  endpoints: [unix:/file.sock]\ndata_dir: /file\n"
	c := mustLoad(t, file, nil)
	if c.Log.Level != "debug" || c.OVSDB.Endpoints[0] != "unix:/file.sock" || c.DataDir != "/file" {
		t.Fatalf("file: %+v", c)
	}
	env := []string{"OVSPLANE_LOG_LEVEL=warn", "OVSPLANE_OVSDB_ENDPOINTS=tcp:10.0.0.1:6640, tcp:10.0.0.2:6640", "PATH=/bin", "OVSPLANE_CONFIG=/x.yaml"}
	c = mustLoad(t, file, env)
	if c.Log.Level != "warn" || !reflect.DeepEqual(c.OVSDB.Endpoints, []string{"tcp:10.0.0.1:6640", "tcp:10.0.0.2:6640"}) || c.DataDir != "/file" {
		t.Fatalf("env over file: %+v", c)
	}
	c = mustLoad(t, file, env, "--log-level=error", "--ovsdb-endpoints=unix:/flag.sock", "--api-socket-mode=0600", "--data-dir=/flag")
	if c.Log.Level != "error" || !reflect.DeepEqual(c.OVSDB.Endpoints, []string{"unix:/flag.sock"}) || c.API.SocketMode != "0600" || c.DataDir != "/flag" {
		t.Fatalf("flags over env: %+v", c)
	}
	if c.API.Listen[0] != "unix:/flag/ovsplaned.sock" {
		t.Fatalf("derived default after flags: %v", c.API.Listen)
	}
	// A scalar in the file for a list key, overridden by a list from the environment.
	c = mustLoad(t, "ovsdb:\n  endpoints: unix:/one.sock\n", nil)
	if !reflect.DeepEqual(c.OVSDB.Endpoints, []string{"unix:/one.sock"}) {
		t.Fatalf("scalar list: %v", c.OVSDB.Endpoints)
	}
	c = mustLoad(t, "ovsdb:\n  endpoints: unix:/one.sock\n", []string{"OVSPLANE_OVSDB_ENDPOINTS=unix:/a,unix:/b"})
	if !reflect.DeepEqual(c.OVSDB.Endpoints, []string{"unix:/a", "unix:/b"}) {
		t.Fatalf("env list: %v", c.OVSDB.Endpoints)
	}
	// An empty variable is unset.
	c = mustLoad(t, file, []string{"OVSPLANE_LOG_LEVEL="})
	if c.Log.Level != "debug" {
		t.Fatalf("empty env: %q", c.Log.Level)
	}
	// The environment and flags are validated like the file.
	_, err := load(t, "", []string{"OVSPLANE_LOG_LEVEL=loud"})
	if err == nil || !strings.Contains(err.Error(), `log.level: unknown level "loud"`) {
		t.Fatalf("bad env value: %v", err)
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		env  []string
		want []string
	}{
		{"top level", "dat_dir: /x\n", nil,
			[]string{"dat_dir: unknown key (known keys: api, bridges, data_dir, log, metrics, other_config, overlay, ovsdb, plugin_dir, plugins)"}},
		{"settings section", "api:\n  sock_mode: \"0600\"\n", nil,
			[]string{"api.sock_mode: unknown key (known keys: auth, listen, socket_group, socket_mode, tls)"}},
		{"nested section", "ovsdb:\n  tls:\n    key: /k\n", nil,
			[]string{"ovsdb.tls.key: unknown key (known keys: ca_cert, certificate, private_key)"}},
		{"bridge", "bridges:\n  - name: br0\n    fial_mode: secure\n", nil,
			[]string{"bridges[0].fial_mode: unknown key"}},
		{"interface", "bridges:\n  - name: br0\n    ports:\n      - name: p0\n        interfaces:\n          - name: p0\n            mtu: 9000\n", nil,
			[]string{"bridges[0].ports[0].interfaces[0].mtu: unknown key"}},
		{"case matters", "bridges:\n  - Name: br0\n", nil,
			[]string{"bridges[0].Name: unknown key"}},
		{"section not a map", "log: debug\n", nil,
			[]string{"log: must be a mapping (keys: format, level)"}},
		{"list for scalar", "data_dir: [/a, /b]\n", nil,
			[]string{"data_dir: must be a single value, not a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.doc, tt.env)
			if err == nil {
				t.Fatalf("no error, config %+v", c)
			}
			if c != nil {
				t.Fatalf("half-filled config returned with error")
			}
			if got := problems(err); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestErrorMessagesOfParse(t *testing.T) {
	tests := map[string]string{
		"log:\n  level: info\n  level: debug\n": "line 3: log.level: duplicate key",
		"x: &a {y: 1}\nlog:\n  <<: *a\n":        "line 3: log: merge keys (<<) are not supported",
		"- a\n":                                 "line 1: the document must be a mapping of keys to values",
		"env":                                   `environment OVSPLANE_LOGLEVEL: unknown variable (known: OVSPLANE_OVSDB_ENDPOINTS, OVSPLANE_OVSDB_TLS_PRIVATE_KEY, OVSPLANE_OVSDB_TLS_CERTIFICATE, OVSPLANE_OVSDB_TLS_CA_CERT, OVSPLANE_OVSDB_RECONNECT_WAIT, OVSPLANE_OVSDB_APPLY_TIMEOUT, OVSPLANE_OVSDB_VSWITCHD_UNIXCTL, OVSPLANE_DATA_DIR, OVSPLANE_API_LISTEN, OVSPLANE_API_SOCKET_MODE, OVSPLANE_API_SOCKET_GROUP, OVSPLANE_API_TLS_PRIVATE_KEY, OVSPLANE_API_TLS_CERTIFICATE, OVSPLANE_API_TLS_CA_CERT, OVSPLANE_API_AUTH_ADMINS_UIDS, OVSPLANE_API_AUTH_ADMINS_GIDS, OVSPLANE_API_AUTH_ADMINS_GROUPS, OVSPLANE_API_AUTH_ADMINS_SUBJECTS, OVSPLANE_API_AUTH_READERS_UIDS, OVSPLANE_API_AUTH_READERS_GIDS, OVSPLANE_API_AUTH_READERS_GROUPS, OVSPLANE_API_AUTH_READERS_SUBJECTS, OVSPLANE_LOG_LEVEL, OVSPLANE_LOG_FORMAT, OVSPLANE_METRICS_ADDRESS, OVSPLANE_METRICS_PPROF, OVSPLANE_METRICS_PPROF_ANY_ADDRESS, OVSPLANE_OVERLAY_FABRIC_REMOTES, OVSPLANE_PLUGIN_DIR)`,
		"bridges:\n  - name: br0\n    ports:\n      - name: p0\n        tag: ten\n        interfaces: [{name: p0}]\n": `bridges[0].ports[0].tag: cannot parse value as 'int': strconv.ParseInt: invalid syntax`,
	}
	for doc, want := range tests {
		var env []string
		if doc == "env" {
			doc, env = "", []string{"OVSPLANE_LOGLEVEL=debug"}
		}
		_, err := load(t, doc, env)
		if err == nil {
			t.Fatalf("%q: no error", doc)
		}
		if got := problems(err); len(got) != 1 || got[0] != want {
			t.Errorf("%q:\n got %q\nwant %q", doc, got, want)
		}
	}
}

// valid returns a Config that passes Validate; each validation case breaks one thing.
func valid() *Config {
	tag := 10
	return &Config{
		OVSDB:     OVSDB{Endpoints: []string{"unix:/var/run/openvswitch/db.sock"}},
		DataDir:   "/var/lib/ovsplane",
		API:       API{Listen: []string{"unix:/var/lib/ovsplane/ovsplaned.sock"}, SocketMode: "0660"},
		Log:       Log{Level: "info", Format: "text"},
		PluginDir: "/var/lib/ovsplane/plugins",
		OtherConfig: map[string]string{
			"dpdk-init": "true", "pmd-cpu-mask": "0x6",
		},
		Bridges: []model.Bridge{
			{Name: "br0", DatapathType: "netdev", Ports: []model.Port{
				{Name: "p0", Tag: &tag, Interfaces: []model.Interface{{Name: "p0", Type: "internal"}}},
			}},
			{Name: "br1", Ports: []model.Port{
				{Name: "vhu0", Interfaces: []model.Interface{{Name: "vhu0", Type: "dpdkvhostuserclient", Options: map[string]string{"vhost-server-path": "/run/vhu0.sock"}}}},
			}},
			{Name: "br2", Ports: []model.Port{
				{Name: "p2", Interfaces: []model.Interface{{Name: "p2"}}},
			}},
		},
	}
}

func iface(c *Config) *model.Interface { return &c.Bridges[2].Ports[0].Interfaces[0] }

func ptr(i int) *int { return &i }

func TestValidate(t *testing.T) {
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	const ip = "bridges[2].ports[0].interfaces[0]"
	tests := []struct {
		name   string
		change func(c *Config)
		want   []string
	}{
		{"endpoint scheme", func(c *Config) { c.OVSDB.Endpoints = []string{"http://x"} },
			[]string{`ovsdb.endpoints[0]: "http://x" must start with unix:, tcp: or ssl:`}},
		{"endpoint unix path", func(c *Config) { c.OVSDB.Endpoints = []string{"unix:"} },
			[]string{`ovsdb.endpoints[0]: "unix:" has no socket path (write unix:/var/run/openvswitch/db.sock)`}},
		{"endpoint tcp port", func(c *Config) { c.OVSDB.Endpoints = []string{"tcp:10.0.0.1"} },
			[]string{`ovsdb.endpoints[0]: "tcp:10.0.0.1" is not tcp:HOST:PORT (IPv6 hosts in brackets)`}},
		{"ssl needs tls", func(c *Config) { c.OVSDB.Endpoints = []string{"ssl:[::1]:6640"}; c.OVSDB.TLS.CACert = "/ca" },
			[]string{"ovsdb.tls.private_key: required by an ssl: endpoint", "ovsdb.tls.certificate: required by an ssl: endpoint"}},
		{"ssl with tls", func(c *Config) {
			c.OVSDB.Endpoints = []string{"ssl:[::1]:6640"}
			c.OVSDB.TLS = model.TLS{PrivateKey: "/k", Certificate: "/c", CACert: "/ca"}
		}, nil},
		{"vswitchd unixctl", func(c *Config) { c.OVSDB.VswitchdUnixctl = "/var/run/openvswitch/ovs-vswitchd.zs.ctl" }, nil},
		{"overlay fabric remotes", func(c *Config) {
			c.Overlay.FabricRemotes = []string{"tcp:10.0.0.1:6641", "tcp:[2001:db8::1]:6641", "unix:/run/ovsplane/fabric.sock"}
		}, nil},
		{"overlay fabric remotes bad", func(c *Config) {
			c.Overlay.FabricRemotes = []string{"ssl:10.0.0.1:6641", "tcp:10.0.0.1", "unix:fabric.sock", "tcp:10.0.0.2:6641", "tcp:10.0.0.2:6641"}
		}, []string{
			`overlay.fabric_remotes[0]: "ssl:10.0.0.1:6641" must start with unix: or tcp: (ssl: is not supported by the fabric view yet)`,
			`overlay.fabric_remotes[1]: "tcp:10.0.0.1" is not tcp:HOST:PORT (IPv6 hosts in brackets)`,
			`overlay.fabric_remotes[2]: "unix:fabric.sock" needs an absolute socket path of at most 107 bytes (unix:/run/ovsplane/fabric1.sock)`,
			`overlay.fabric_remotes[4]: "tcp:10.0.0.2:6641" is listed twice`,
		}},
		{"overlay fabric remotes too many", func(c *Config) {
			c.Overlay.FabricRemotes = strings.Split("tcp:a:1,tcp:a:2,tcp:a:3,tcp:a:4,tcp:a:5,tcp:a:6,tcp:a:7,tcp:a:8", ",")
		}, []string{`overlay.fabric_remotes: 8 remotes: give at most 7 cluster members`}},
		{"vswitchd unixctl relative", func(c *Config) { c.OVSDB.VswitchdUnixctl = "ovs-vswitchd.zs.ctl" },
			[]string{`ovsdb.vswitchd_unixctl: "ovs-vswitchd.zs.ctl": want the absolute path (at most 107 bytes, no control characters) of the socket ovs-vswitchd was started with --unixctl=PATH, e.g. /var/run/openvswitch/ovs-vswitchd.zs.ctl`}},
		{"vswitchd unixctl newline", func(c *Config) { c.OVSDB.VswitchdUnixctl = "/run/x\n.ctl" },
			[]string{`ovsdb.vswitchd_unixctl: "/run/x\n.ctl": want the absolute path (at most 107 bytes, no control characters) of the socket ovs-vswitchd was started with --unixctl=PATH, e.g. /var/run/openvswitch/ovs-vswitchd.zs.ctl`}},
		{"relative data dir", func(c *Config) { c.DataDir = "var/lib" }, []string{`data_dir: "var/lib" must be an absolute path`}},
		{"relative plugin dir", func(c *Config) { c.PluginDir = "plugins" }, []string{`plugin_dir: "plugins" must be an absolute path`}},
		{"listen scheme", func(c *Config) { c.API.Listen = []string{"/run/x.sock"} },
			[]string{`api.listen[0]: "/run/x.sock" must start with unix: or tcp:`}},
		{"listen relative", func(c *Config) { c.API.Listen = []string{"unix:x.sock"} },
			[]string{`api.listen[0]: "unix:x.sock" needs an absolute socket path (unix:/run/ovsplane/ovsplaned.sock)`}},
		{"listen tcp needs tls", func(c *Config) { c.API.Listen = []string{"tcp::9470"} },
			[]string{"api.tls.private_key: required by a tcp: listener", "api.tls.certificate: required by a tcp: listener", "api.tls.ca_cert: required by a tcp: listener"}},
		{"listen tcp bad", func(c *Config) {
			c.API.Listen = []string{"tcp:9470"}
			c.API.TLS = model.TLS{PrivateKey: "/k", Certificate: "/c", CACert: "/ca"}
		},
			[]string{`api.listen[0]: "tcp:9470" is not tcp:HOST:PORT`}},
		{"socket mode", func(c *Config) { c.API.SocketMode = "660x" },
			[]string{`api.socket_mode: "660x" is not an octal file mode (write it quoted, like "0660")`}},
		{"socket mode 8", func(c *Config) { c.API.SocketMode = "0680" },
			[]string{`api.socket_mode: "0680" is not an octal file mode (write it quoted, like "0660")`}},
		{"log level", func(c *Config) { c.Log.Level = "verbose" },
			[]string{`log.level: unknown level "verbose" (one of: "debug", "info", "warn", "error")`}},
		{"log format", func(c *Config) { c.Log.Format = "xml" },
			[]string{`log.format: unknown format "xml" (one of: "text", "json")`}},
		{"metrics address", func(c *Config) { c.Metrics.Address = "9476" },
			[]string{`metrics.address: "9476" is not HOST:PORT (like 127.0.0.1:9476 or :9476)`}},
		{"dpdk-init", func(c *Config) { c.OtherConfig["dpdk-init"] = "yes" },
			[]string{`other_config.dpdk-init: "yes" is not one of: "true", "false", "try"`}},
		{"pmd mask", func(c *Config) { c.OtherConfig["pmd-cpu-mask"] = "cores 1-2" },
			[]string{`other_config.pmd-cpu-mask: "cores 1-2" is not a hexadecimal CPU mask (like "0x6")`}},
		{"empty map key", func(c *Config) { c.Bridges[0].ExternalIDs = map[string]string{"": "x"} },
			[]string{`bridges[0].external_ids: empty key`}},
		{"bridge name missing", func(c *Config) { c.Bridges[0].Name = "" }, []string{"bridges[0].name: required"}},
		{"bridge name long", func(c *Config) { c.Bridges[0].Name = "br-0123456789abc" },
			[]string{`bridges[0].name: "br-0123456789abc" is longer than 15 characters (its local port is a kernel device)`}},
		{"bridge name slash", func(c *Config) { c.Bridges[0].Name = "br/0" },
			[]string{`bridges[0].name: "br/0" must not contain '/' or white space`}},
		{"duplicate bridge", func(c *Config) { c.Bridges[1].Name = "br0" },
			[]string{`bridges[1].name: duplicate bridge name "br0" (also bridges[0])`}},
		{"datapath type", func(c *Config) { c.Bridges[0].DatapathType = "dpdk" },
			[]string{`bridges[0].datapath_type: unknown datapath type "dpdk" (one of: "", "system", "netdev")`}},
		{"fail mode", func(c *Config) { c.Bridges[0].FailMode = "open" },
			[]string{`bridges[0].fail_mode: unknown fail mode "open" (one of: "", "standalone", "secure")`}},
		{"protocol", func(c *Config) { c.Bridges[0].Protocols = []string{"OpenFlow13", "OpenFlow16"} },
			[]string{`bridges[0].protocols[1]: unknown protocol "OpenFlow16" (one of: "OpenFlow10", "OpenFlow11", "OpenFlow12", "OpenFlow13", "OpenFlow14", "OpenFlow15")`}},
		{"controller", func(c *Config) { c.Bridges[0].Controllers = []string{"tcp:127.0.0.1:6653", "127.0.0.1", "tcp:"} },
			[]string{
				`bridges[0].controller[1]: "127.0.0.1" is not a controller target (tcp:, ssl:, unix:, ptcp:, pssl: or punix: followed by an address)`,
				`bridges[0].controller[2]: "tcp:" is not a controller target (tcp:, ssl:, unix:, ptcp:, pssl: or punix: followed by an address)`,
			}},
		{"port name missing", func(c *Config) { c.Bridges[0].Ports[0].Name = "" }, []string{"bridges[0].ports[0].name: required"}},
		{"duplicate port across bridges", func(c *Config) { c.Bridges[2].Ports[0].Name = "p0" },
			[]string{`bridges[2].ports[0].name: duplicate port name "p0" (also bridges[0].ports[0])`}},
		{"port named like a bridge", func(c *Config) { c.Bridges[2].Ports[0].Name = "br0" },
			[]string{`bridges[2].ports[0].name: port name "br0" is the name of bridge bridges[0] (its local port)`}},
		{"interface named like a bridge", func(c *Config) { iface(c).Name = "br1" },
			[]string{`bridges[2].ports[0].interfaces[0].name: interface name "br1" is the name of bridge bridges[1] (its local interface)`}},
		{"tag high", func(c *Config) { c.Bridges[0].Ports[0].Tag = ptr(4096) },
			[]string{"bridges[0].ports[0].tag: VLAN 4096 out of range (0..4095)"}},
		{"tag negative", func(c *Config) { c.Bridges[0].Ports[0].Tag = ptr(-1) },
			[]string{"bridges[0].ports[0].tag: VLAN -1 out of range (0..4095)"}},
		{"tag bounds", func(c *Config) { c.Bridges[0].Ports[0].Tag = ptr(4095); c.Bridges[2].Ports[0].Tag = ptr(0) }, nil},
		{"trunk", func(c *Config) { c.Bridges[0].Ports[0].Trunks = []int{1, 5000} },
			[]string{"bridges[0].ports[0].trunks[1]: VLAN 5000 out of range (0..4095)"}},
		{"no interfaces", func(c *Config) { c.Bridges[0].Ports[0].Interfaces = nil },
			[]string{"bridges[0].ports[0].interfaces: at least one interface required (for a plain port, one with the port's name)"}},
		{"bond mode without bond", func(c *Config) { c.Bridges[0].Ports[0].BondMode = "balance-tcp" },
			[]string{"bridges[0].ports[0].bond_mode: set on a port with one interface (a bond needs two or more)"}},
		{"bond mode unknown", func(c *Config) {
			p := &c.Bridges[2].Ports[0]
			p.BondMode = "lacp"
			p.Interfaces = append(p.Interfaces, model.Interface{Name: "p2b"})
		}, []string{`bridges[2].ports[0].bond_mode: unknown bond mode "lacp" (one of: "active-backup", "balance-slb", "balance-tcp")`}},
		{"bond ok", func(c *Config) {
			p := &c.Bridges[2].Ports[0]
			p.BondMode = "active-backup"
			p.Interfaces = append(p.Interfaces, model.Interface{Name: "p2b"})
		}, nil},
		{"vlan mode unknown", func(c *Config) { c.Bridges[0].Ports[0].VLANMode = "dot1q" },
			[]string{`bridges[0].ports[0].vlan_mode: unknown VLAN mode "dot1q" (one of: "", "access", "trunk", "native-tagged", "native-untagged")`}},
		{"vlan mode trunk with tag", func(c *Config) { p := &c.Bridges[0].Ports[0]; p.VLANMode, p.Tag = "trunk", ptr(10) },
			[]string{"bridges[0].ports[0].tag: set on a port with vlan_mode trunk, which has no tag (OVS would ignore it); remove tag, or use vlan_mode native-tagged or native-untagged to give the port a native VLAN"}},
		{"vlan mode access with trunks", func(c *Config) {
			p := &c.Bridges[0].Ports[0]
			p.VLANMode, p.Tag, p.Trunks = "access", ptr(10), []int{20}
		},
			[]string{"bridges[0].ports[0].trunks: set on a port with vlan_mode access, which carries only its tag (OVS would ignore them); remove trunks, or use vlan_mode native-tagged or native-untagged"}},
		{"vlan modes ok", func(c *Config) {
			p := &c.Bridges[0].Ports[0]
			p.VLANMode, p.Tag, p.Trunks = "native-untagged", ptr(10), []int{20, 30}
			c.Bridges[2].Ports[0].VLANMode = "trunk"
			c.Bridges[2].Ports[0].Trunks = []int{5}
		}, nil},
		{"lacp unknown", func(c *Config) { c.Bridges[0].Ports[0].LACP = "on" },
			[]string{`bridges[0].ports[0].lacp: unknown LACP mode "on" (one of: "", "active", "passive", "off")`}},
		{"lacp ok", func(c *Config) {
			p := &c.Bridges[2].Ports[0]
			p.BondMode, p.LACP = "balance-tcp", "active"
			p.Interfaces = append(p.Interfaces, model.Interface{Name: "p2b"})
			c.Bridges[0].Ports[0].LACP = "passive" // OVS allows LACP on a port with one interface
		}, nil},
		{"interface name missing", func(c *Config) { iface(c).Name = "" }, []string{ip + ".name: required"}},
		{"interface type", func(c *Config) { iface(c).Type = "dpdkk" },
			[]string{ip + `.type: unknown interface type "dpdkk" (one of: "", "system", "internal", "dpdk", "dpdkvhostuser", "dpdkvhostuserclient", "patch", "vxlan", "geneve", "gre", "tap")`}},
		{"duplicate interface", func(c *Config) { iface(c).Name = "vhu0" },
			[]string{ip + `.name: duplicate interface name "vhu0" (also bridges[1].ports[0].interfaces[0])`}},
		{"long system name", func(c *Config) { iface(c).Name = "eth-0123456789ab" },
			[]string{ip + `.name: "eth-0123456789ab" is longer than 15 characters, the limit for a kernel device of type ""`}},
		{"long internal name", func(c *Config) { iface(c).Name = "int-0123456789ab"; iface(c).Type = "internal" },
			[]string{ip + `.name: "int-0123456789ab" is longer than 15 characters, the limit for a kernel device of type "internal"`}},
		{"long vhost name ok", func(c *Config) {
			*iface(c) = model.Interface{Name: "vhu-0123456789abcdef", Type: "dpdkvhostuser"}
		}, nil},
		{"interface name space", func(c *Config) { iface(c).Name = "p 2" },
			[]string{ip + `.name: "p 2" must not contain '/' or white space`}},
		{"dpdk devargs", func(c *Config) { iface(c).Type = "dpdk" },
			[]string{ip + `.options.dpdk-devargs: required for type "dpdk"`}},
		{"vhostuserclient path", func(c *Config) { iface(c).Type = "dpdkvhostuserclient" },
			[]string{ip + `.options.vhost-server-path: required for type "dpdkvhostuserclient"`}},
		{"patch peer", func(c *Config) { iface(c).Type = "patch" },
			[]string{ip + `.options.peer: required for type "patch"`}},
		{"vxlan remote", func(c *Config) { iface(c).Type = "vxlan" },
			[]string{ip + `.options.remote_ip: required for type "vxlan"`}},
		{"geneve remote", func(c *Config) { iface(c).Type = "geneve" },
			[]string{ip + `.options.remote_ip: required for type "geneve"`}},
		{"gre remote", func(c *Config) { iface(c).Type = "gre"; iface(c).Options = map[string]string{"remote_ip": ""} },
			[]string{ip + `.options.remote_ip: required for type "gre"`}},
		{"mtu", func(c *Config) { iface(c).MTURequest = ptr(67) },
			[]string{ip + ".mtu_request: 67 out of range (68..65535)"}},
		{"ofport", func(c *Config) { iface(c).OFPortRequest = ptr(65280) },
			[]string{ip + ".ofport_request: 65280 out of range (1..65279)"}},
		{"all at once", func(c *Config) {
			c.Log.Level = "loud"
			c.Bridges[1].Name = "br0"
			iface(c).Type = "dpdkk"
		}, []string{
			`log.level: unknown level "loud" (one of: "debug", "info", "warn", "error")`,
			`bridges[1].name: duplicate bridge name "br0" (also bridges[0])`,
			ip + `.type: unknown interface type "dpdkk" (one of: "", "system", "internal", "dpdk", "dpdkvhostuser", "dpdkvhostuserclient", "patch", "vxlan", "geneve", "gre", "tap")`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(c)
			err := c.Validate()
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestLoadRejectsWhole(t *testing.T) {
	doc := "log:\n  level: debug\nbridges:\n  - name: br0\n    ports:\n      - name: p0\n        tag: 5000\n        interfaces: [{name: p0}]\n"
	c, err := load(t, doc, nil)
	if c != nil || err == nil {
		t.Fatalf("got config %+v, err %v", c, err)
	}
	want := "test.yaml: 1 problem(s):\nbridges[0].ports[0].tag: VLAN 5000 out of range (0..4095)"
	if err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}
}

func TestValuesKeepTheirText(t *testing.T) {
	doc := "other_config:\n  pmd-cpu-mask: 0x10\n  dpdk-init: true\n  dpdk-socket-mem: 1024,1024\n" +
		"bridges:\n  - name: br0\n    external_ids: {Owner-ID: ABC}\n    ports:\n      - name: p0\n        tag: 0x10\n        trunks: [1, 2]\n        interfaces: [{name: p0, mtu_request: 9000}]\n"
	c := mustLoad(t, doc, nil)
	want := map[string]string{"pmd-cpu-mask": "0x10", "dpdk-init": "true", "dpdk-socket-mem": "1024,1024"}
	if !reflect.DeepEqual(c.OtherConfig, want) {
		t.Fatalf("other_config %v", c.OtherConfig)
	}
	if c.Bridges[0].ExternalIDs["Owner-ID"] != "ABC" {
		t.Fatalf("external_ids lost case: %v", c.Bridges[0].ExternalIDs)
	}
	p := c.Bridges[0].Ports[0]
	if *p.Tag != 16 || !reflect.DeepEqual(p.Trunks, []int{1, 2}) || *p.Interfaces[0].MTURequest != 9000 {
		t.Fatalf("port %+v", p)
	}
}

func TestAliases(t *testing.T) {
	doc := "x_ids: &ids {team: a}\n"
	if _, err := load(t, doc, nil); err == nil {
		t.Fatal("unknown top-level key accepted")
	}
	doc = "bridges:\n  - name: br0\n    external_ids: &ids {team: a}\n  - name: br1\n    external_ids: *ids\n"
	c := mustLoad(t, doc, nil)
	if c.Bridges[1].ExternalIDs["team"] != "a" {
		t.Fatalf("alias: %+v", c.Bridges[1])
	}
	// Exponential alias expansion is bounded.
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	_, err := load(t, b.String(), nil)
	if err == nil || !strings.Contains(err.Error(), "too many nodes") {
		t.Fatalf("billion laughs: %v", err)
	}
}

func readExample(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var examples = []string{"../../examples/quickstart.yaml", "testdata/full.yaml"}

func TestExamplesRoundTrip(t *testing.T) {
	for _, path := range examples {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c, err := Load(context.Background(), Options{File: path})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			out, err := yaml.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Load(context.Background(), Options{File: "round-trip", Data: out})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !reflect.DeepEqual(c, again) {
				t.Fatalf("round trip differs:\n%+v\n%+v\n%s", c, again, out)
			}
			if !c.Desired().Equal(again.Desired()) {
				t.Fatal("desired states differ")
			}
		})
	}
}

func TestQuickstart(t *testing.T) {
	c, err := Load(context.Background(), Options{File: "../../examples/quickstart.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if c.OtherConfig["dpdk-init"] != "true" || len(c.Bridges) != 1 || c.Bridges[0].DatapathType != "netdev" {
		t.Fatalf("quickstart: %+v", c)
	}
	types := map[string]bool{}
	for _, p := range c.Bridges[0].Ports {
		for _, in := range p.Interfaces {
			types[in.Type] = true
		}
	}
	if !types["dpdkvhostuserclient"] || !types["internal"] {
		t.Fatalf("quickstart interface types: %v", types)
	}
}

func TestDesired(t *testing.T) {
	a := valid()
	b := valid()
	// Same content, other order.
	b.Bridges[0], b.Bridges[2] = b.Bridges[2], b.Bridges[0]
	b.Bridges[2].Protocols = nil
	b.Bridges[2].OtherConfig = map[string]string{}
	a.Bridges[0].Ports = append(a.Bridges[0].Ports, model.Port{Name: "a", Interfaces: []model.Interface{{Name: "a", Type: "system"}}})
	b.Bridges[2].Ports = append([]model.Port{{Name: "a", Interfaces: []model.Interface{{Name: "a"}}}}, b.Bridges[2].Ports...)
	da, db := a.Desired(), b.Desired()
	if !da.Equal(db) {
		t.Fatalf("not equal:\n%+v\n%+v", da, db)
	}
	var names []string
	for _, br := range da.Bridges {
		names = append(names, br.Name)
	}
	if !reflect.DeepEqual(names, []string{"br0", "br1", "br2"}) {
		t.Fatalf("order %v", names)
	}
	if br, ok := da.Bridge("br0"); !ok || br.Ports[0].Name != "a" {
		t.Fatalf("Bridge(br0) = %+v %v", br, ok)
	}
	if _, ok := da.Bridge("nope"); ok {
		t.Fatal("Bridge(nope) found")
	}
	// A deep copy: changing the Config does not change the DesiredState.
	*a.Bridges[0].Ports[0].Tag = 99
	a.OtherConfig["dpdk-init"] = "false"
	if *da.Bridges[0].Ports[1].Tag != 10 || da.OtherConfig["dpdk-init"] != "true" {
		t.Fatal("Desired shares memory with the Config")
	}
	b.Bridges[0].Ports[0].Interfaces[0].Options = map[string]string{"x": "y"}
	if da.Equal(b.Desired()) {
		t.Fatal("different states equal")
	}
}

func TestLogHandler(t *testing.T) {
	for _, tt := range []struct {
		log   Log
		level slog.Level
		json  bool
	}{
		{Log{Level: "debug", Format: "json"}, slog.LevelDebug, true},
		{Log{Level: "info", Format: "text"}, slog.LevelInfo, false},
		{Log{Level: "warn"}, slog.LevelWarn, false},
		{Log{Level: "error"}, slog.LevelError, false},
	} {
		lvl, ok := tt.log.SlogLevel()
		if !ok || lvl != tt.level {
			t.Errorf("%+v: level %v %v", tt.log, lvl, ok)
		}
		var buf bytes.Buffer
		slog.New(tt.log.NewHandler(&buf)).Log(context.Background(), tt.level, "hello")
		if got := strings.HasPrefix(buf.String(), "{"); got != tt.json {
			t.Errorf("%+v: output %q", tt.log, buf.String())
		}
		if !tt.log.NewHandler(&buf).Enabled(context.Background(), tt.level) || tt.log.NewHandler(&buf).Enabled(context.Background(), tt.level-1) {
			t.Errorf("%+v: wrong enabled level", tt.log)
		}
	}
	if _, ok := (Log{Level: "loud"}).SlogLevel(); ok {
		t.Error("unknown level accepted")
	}
}

func TestLoadFileErrors(t *testing.T) {
	_, err := Load(context.Background(), Options{File: filepath.Join(t.TempDir(), "missing.yaml")})
	if err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("missing file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, Options{}); err != context.Canceled {
		t.Fatalf("canceled: %v", err)
	}
	if _, err := load(t, "bridges: [\n", nil); err == nil || !strings.Contains(err.Error(), "parsing YAML") {
		t.Fatalf("bad YAML: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func FuzzLoad(f *testing.F) {
	for _, path := range examples {
		f.Add(readExample(f, path))
	}
	f.Add([]byte("log: debug\n"))
	f.Add([]byte("bridges:\n  - name: br0\n    ports: [{name: p, tag: 5, interfaces: [{name: p, type: dpdk}]}]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("plugins:\n  - {name: p, path: p, sha256: " + strings.Repeat("ab", 32) + ", config: {n: 1e3, f: 0.5, t: 2001-12-14, u: 18446744073709551615, l: [x, {y: ~}]}, env: [HOME]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load(context.Background(), Options{File: "fuzz", Data: data})
		if (c == nil) == (err == nil) {
			t.Fatalf("config %v and error %v", c, err)
		}
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load returned an invalid config: %v", err)
		}
		// A valid config survives a round trip through YAML unchanged.
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := Load(context.Background(), Options{File: "fuzz round trip", Data: out})
		if err != nil {
			t.Fatalf("round trip: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(c, again) || !c.Desired().Equal(again.Desired()) {
			t.Fatalf("round trip differs:\n%+v\n%+v", c, again)
		}
	})
}

// TestDocExample keeps the package doc's file format example and testdata/full.yaml (which
// TestExamplesRoundTrip loads) the same.
func TestDocExample(t *testing.T) {
	doc := string(readExample(t, "doc.go"))
	start := strings.Index(doc, "// # File format")
	end := strings.Index(doc, "// Interface types:")
	if start < 0 || end < start {
		t.Fatal("doc.go: file format section not found")
	}
	var b strings.Builder
	for _, line := range strings.Split(doc[start:end], "\n") {
		if rest, ok := strings.CutPrefix(line, "//\t"); ok {
			b.WriteString(rest + "\n")
		}
	}
	if want := string(readExample(t, "testdata/full.yaml")); b.String() != want {
		t.Fatalf("doc.go example and testdata/full.yaml differ; regenerate the file from the doc:\n%s", b.String())
	}
}

func TestPluginTypesNeedPlugins(t *testing.T) {
	port := model.Port{Name: "vm1", Interfaces: []model.Interface{{Name: "vm1", Type: "vdpa", Options: map[string]string{"pf": "0000:65:00.0"}}}}
	c := &Config{DataDir: "/var/lib/ovsplane"}
	c.applyDefaults()
	c.Bridges = []model.Bridge{{Name: "br0", Ports: []model.Port{port}}}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `unknown interface type "vdpa"`) {
		t.Fatalf("a plugin type without plugins: %v", err)
	}
	c.Plugins = []model.Plugin{{Name: "vdpa", Path: "ovsplane-plugin-vdpa", SHA256: strings.Repeat("a", 64)}}
	if err := c.Validate(); err != nil {
		t.Fatalf("a plugin type with plugins configured: %v", err)
	}
}
