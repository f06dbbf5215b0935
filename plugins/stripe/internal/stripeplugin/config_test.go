package stripeplugin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/stripe/policy"
)

const goodConfig = `{"node": 1, "links": [{"interface": "eth1", "capacity_mbit": 100}, {"interface": "eth2"}], "peers": [{"node": 2}]}`

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	ec, err := c.engineConfig(2)
	if err != nil {
		t.Fatal(err)
	}
	if ec.Node != 1 || ec.Peer != 2 || ec.Policy.Kind != policy.KindSeed || ec.Policy.Delta != DefaultDelta || ec.Policy.Hasher != nil ||
		ec.Pace || ec.Period != 0 || ec.Smoothing != 0 {
		t.Errorf("engine config %+v", ec)
	}
	if len(ec.Vmax) != 2 || ec.Vmax[0] != 100e6/8 || ec.Vmax[1] != DefaultCapacityMbit*1e6/8 {
		t.Errorf("Vmax %v, want 100 Mbit/s and the default", ec.Vmax)
	}
	if len(ec.Policy.Capacities) != 2 || ec.Policy.Capacities[0] != 100 || ec.Policy.Capacities[1] != DefaultCapacityMbit {
		t.Errorf("capacities %v", ec.Policy.Capacities)
	}
}

func TestParseConfigAllFields(t *testing.T) {
	key := strings.Repeat("6d5a", 20) // 40 bytes
	c, err := ParseConfig([]byte(`{"node": 7, "netns": "blue", "links": [{"interface": "a"}], "peers": [{"node": 8}, {"node": 9}],
		"policy": "weighted", "period_ms": 5, "delta": 0.25, "smoothing": 0.5, "toeplitz_key": "` + key + `", "pace": true, "rx_ring": true,
		"endpoint": {"unix": "/run/s.sock", "tcp": "127.0.0.1:7475", "udp": "[::1]:7476", "max_apps": 9, "period_ms": 50}}`))
	if err != nil {
		t.Fatal(err)
	}
	ec, err := c.engineConfig(9)
	if err != nil {
		t.Fatal(err)
	}
	if ec.Peer != 9 || ec.Policy.Kind != policy.KindWeighted || ec.Period != 5*time.Millisecond || ec.Policy.Delta != 0.25 ||
		ec.Smoothing != 0.5 || ec.Policy.Hasher == nil || !ec.Pace || c.Netns != "blue" || !c.RxRing {
		t.Errorf("engine config %+v from %+v", ec, c)
	}
	if d := c.Describe(); !strings.Contains(d, "policy weighted, T 5ms, δ 0.25, r 0.5, toeplitz 40-byte key, pace true") ||
		!strings.Contains(d, "applications: unix /run/s.sock, tcp 127.0.0.1:7475, udp [::1]:7476; at most 9, shares every 50ms") {
		t.Errorf("Describe:\n%s", d)
	}
}

func TestParseConfigTransparent(t *testing.T) {
	c, err := ParseConfig([]byte(`{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "stp0", "address": "10.99.0.1/30"}},
		{"node": 3, "transparent": {"device": "stp1", "address": "10.99.0.5/30", "mtu": 1400, "offloads": false, "queue_len": 100}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.tunnels() != 2 || !c.Peers[0].Transparent.offloads() || c.Peers[1].Transparent.offloads() || c.Peers[1].Transparent.prefix().String() != "10.99.0.5/30" {
		t.Errorf("config %+v", c)
	}
	d := c.Describe()
	for _, want := range []string{"peer 2, transparent: tun stp0 10.99.0.1/30, MTU the engine's frame payload, offloads true, queue 4096",
		"peer 3, transparent: tun stp1 10.99.0.5/30, MTU 1400, offloads false, queue 100"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe lacks %q:\n%s", want, d)
		}
	}
}

func TestParseConfigRefuses(t *testing.T) {
	long := `{"node": 1, "links": [` + strings.Repeat(`{"interface": "x"},`, 2000) + `{"interface": "y"}], "peers": [{"node": 2}]}`
	var many []string
	for i := range 16 {
		many = append(many, `{"interface": "e`+string(rune('a'+i))+`"}`)
	}
	manyLinks := `[` + strings.Join(many, ",") + `]`
	for _, tc := range []struct {
		name, config, field, says string
	}{
		{"empty", ``, "config", "give at least node"},
		{"not an object", `[1]`, "config", "want an object"},
		{"trailing", goodConfig + `{}`, "config", "trailing data"},
		{"too big", long, "config", "more than"},
		{"unknown field", `{"node": 1, "link": []}`, "config.link", "unknown field"},
		{"unknown link field", `{"node": 1, "links": [{"interface": "a", "speed": 1}], "peers": [{"node": 2}]}`, "config.links[0].speed", "unknown field"},
		{"unknown peer field", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "mac": "x"}]}`, "config.peers[0].mac", "unknown field"},
		{"node type", `{"node": "one", "links": [{"interface": "a"}], "peers": [{"node": 2}]}`, "config.node", "want a number"},
		{"node missing", `{"links": [{"interface": "a"}], "peers": [{"node": 2}]}`, "config.node", "this node's id"},
		{"node too big", `{"node": 4294967296, "links": [{"interface": "a"}], "peers": [{"node": 2}]}`, "config.node", "want a number"},
		{"netns", `{"node": 1, "netns": "../x", "links": [{"interface": "a"}], "peers": [{"node": 2}]}`, "config.netns", "ip netns"},
		{"no links", `{"node": 1, "links": [], "peers": [{"node": 2}]}`, "config.links", "give 1 to 16"},
		{"too many links", `{"node": 1, "links": ` + manyLinks[:len(manyLinks)-1] + `,{"interface": "z"}], "peers": [{"node": 2}]}`, "config.links", "give 1 to 16"},
		{"bad name", `{"node": 1, "links": [{"interface": "a/b"}], "peers": [{"node": 2}]}`, "config.links[0].interface", "a/b"},
		{"long name", `{"node": 1, "links": [{"interface": "abcdefghijklmnop"}], "peers": [{"node": 2}]}`, "config.links[0].interface", "15"},
		{"same NIC twice", `{"node": 1, "links": [{"interface": "a"}, {"interface": "a"}], "peers": [{"node": 2}]}`, "config.links[1].interface", "also links[0]"},
		{"negative capacity", `{"node": 1, "links": [{"interface": "a", "capacity_mbit": -1}], "peers": [{"node": 2}]}`, "config.links[0].capacity_mbit", "Mbit/s"},
		{"huge capacity", `{"node": 1, "links": [{"interface": "a", "capacity_mbit": 1e7}], "peers": [{"node": 2}]}`, "config.links[0].capacity_mbit", "at most"},
		{"no peers", `{"node": 1, "links": [{"interface": "a"}], "peers": []}`, "config.peers", "give 1 to 16"},
		{"peer 0", `{"node": 1, "links": [{"interface": "a"}], "peers": [{}]}`, "config.peers[0].node", "peer's node id"},
		{"peer is self", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 1}]}`, "config.peers[0].node", "own id"},
		{"peer twice", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}, {"node": 2}]}`, "config.peers[1].node", "also peers[0]"},
		{"too many metrics", `{"node": 1, "links": ` + manyLinks + `, "peers": [{"node": 2}, {"node": 3}]}`, "config.peers", "split the peers"},
		{"policy", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "policy": "random"}`, "config.policy", "round-robin"},
		{"period", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "period_ms": 60001}`, "config.period_ms", "1 to 60000"},
		{"negative period", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "period_ms": -1}`, "config.period_ms", "1 to 60000"},
		{"delta", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "delta": 1.5}`, "config.delta", "0 to 1"},
		{"smoothing 0", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "smoothing": 0}`, "config.smoothing", "more than 0"},
		{"key not hex", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "toeplitz_key": "zz"}`, "config.toeplitz_key", "not hex"},
		{"key short", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "toeplitz_key": "0102"}`, "config.toeplitz_key", "40"},
		{"endpoint unknown field", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "endpoint": {"path": "/x"}}`, "config.endpoint.path", "the endpoint takes unix"},
		{"endpoint relative unix", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "endpoint": {"unix": "x.sock"}}`, "config.endpoint.unix", "absolute"},
		{"endpoint long unix", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "endpoint": {"unix": "/` + strings.Repeat("x", 120) + `"}}`, "config.endpoint.unix", "at most 107"},
		{"endpoint tcp host name", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "endpoint": {"tcp": "localhost:7475"}}`, "config.endpoint.tcp", "literal IP"},
		{"endpoint tcp port 0", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "endpoint": {"tcp": "127.0.0.1:0"}}`, "config.endpoint.tcp", "1 to 65535"},
		{"endpoint udp remote", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "endpoint": {"udp": "10.0.0.1:7475"}}`, "config.endpoint.udp", "endpoint.remote"},
		{"endpoint max apps", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "endpoint": {"max_apps": 5000}}`, "config.endpoint.max_apps", "1 to 4096"},
		{"endpoint period", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "endpoint": {"period_ms": -5}}`, "config.endpoint.period_ms", "1 to 60000"},
		{"transparent unknown field", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "10.9.0.1/30", "dev": "x"}}]}`, "config.peers[0].transparent.dev", "transparent takes device"},
		{"transparent no device", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"address": "10.9.0.1/30"}}]}`, "config.peers[0].transparent.device", "1 to 15"},
		{"transparent device is a link", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "a", "address": "10.9.0.1/30"}}]}`, "config.peers[0].transparent.device", "is links[0]"},
		{"transparent device twice", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "10.9.0.1/30"}}, {"node": 3, "transparent": {"device": "t0", "address": "10.9.1.1/30"}}]}`, "config.peers[1].transparent.device", "also peers[0]"},
		{"transparent IPv6", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "fd00::1/64"}}]}`, "config.peers[0].transparent.address", "IPv4"},
		{"transparent no prefix", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "10.9.0.1"}}]}`, "config.peers[0].transparent.address", "prefix length 1 to 31"},
		{"transparent /32", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "10.9.0.1/32"}}]}`, "config.peers[0].transparent.address", "prefix length 1 to 31"},
		{"transparent network address", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "10.9.0.0/30"}}]}`, "config.peers[0].transparent.address", "10.9.0.1/30"},
		{"transparent overlap", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "10.9.0.1/24"}}, {"node": 3, "transparent": {"device": "t1", "address": "10.9.0.5/30"}}]}`, "config.peers[1].transparent.address", "overlaps"},
		{"transparent mtu", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "10.9.0.1/30", "mtu": 100}}]}`, "config.peers[0].transparent.mtu", "576"},
		{"transparent queue", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2, "transparent": {"device": "t0", "address": "10.9.0.1/30", "queue_len": -1}}]}`, "config.peers[0].transparent.queue_len", "0 to"},
		{"key long", `{"node": 1, "links": [{"interface": "a"}], "peers": [{"node": 2}], "toeplitz_key": "` + strings.Repeat("00", 257) + `"}`, "config.toeplitz_key", "256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.config))
			if api.CodeOf(err) != api.InvalidArgument {
				t.Fatalf("ParseConfig: %v, want InvalidArgument", err)
			}
			ps, perr := sdk.ProblemsOf(err)
			if perr != nil || len(ps) != 1 {
				t.Fatalf("problems %v (%v) of %v", ps, perr, err)
			}
			if ps[0].Field != tc.field || !strings.Contains(ps[0].Message, tc.says) {
				t.Errorf("problem %s, want field %s saying %q", ps[0], tc.field, tc.says)
			}
		})
	}
}

// TestMetricsBound: every configuration ParseConfig accepts makes a sample within the daemon's
// bound, and the largest peer count it allows for each link count is accepted.
func TestMetricsBound(t *testing.T) {
	for links := 1; links <= MaxLinks; links++ {
		peers := 0
		for p := 1; p <= MaxPeers && metricsOf(links, p, 0) <= limits.MaxMetricsPerSample; p++ {
			peers = p
		}
		if peers == 0 {
			t.Fatalf("%d links: not even one peer fits in a sample", links)
		}
		c := Config{Node: 1000}
		for i := range links {
			c.Links = append(c.Links, LinkConfig{Interface: "e" + string(rune('a'+i))})
		}
		for p := range peers {
			c.Peers = append(c.Peers, PeerConfig{Node: uint32(p + 1)})
		}
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseConfig(data); err != nil {
			t.Errorf("%d links, %d peers: %v", links, peers, err)
		}
		if n := appsShown(links, peers, 0); n < 1 || metricsFixed(links, peers, 0)+n*metricsPerApp > limits.MaxMetricsPerSample {
			t.Errorf("%d links, %d peers: room for %d applications", links, peers, n)
		}
	}
}
