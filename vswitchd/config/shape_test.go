package config

import (
	"context"
	"strings"
	"testing"
)

// TestLoadRejectsMappingsWhereListsBelong: a mapping under a list-valued key of the desired
// state is refused with its path and the fix, instead of being coerced into a list (bridges: {}
// would have loaded as "no bridges" and pruned every bridge).
func TestLoadRejectsMappingsWhereListsBelong(t *testing.T) {
	for _, tc := range []struct{ name, doc, path, what string }{
		{"empty bridges mapping", "bridges: {}\n", "bridges", "bridge"},
		{"bridges as one mapping", "bridges:\n  name: br0\n  datapath_type: netdev\n", "bridges", "bridge"},
		{"ports as a mapping", "bridges:\n  - name: br0\n    ports: {name: p0, interfaces: [{name: p0}]}\n",
			"bridges[0].ports", "port"},
		{"interfaces as a mapping", "bridges:\n  - name: br0\n  - name: br1\n    ports:\n      - name: p0\n        interfaces: {name: p0}\n",
			"bridges[1].ports[0].interfaces", "interface"},
		{"controller as a mapping", "bridges:\n  - name: br0\n    controller: {tcp: 127.0.0.1}\n", "bridges[0].controller", "controller target"},
		{"plugins as a mapping", "plugins: {}\n", "plugins", "plugin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(context.Background(), Options{File: "test.yaml", Data: []byte(tc.doc)})
			if err == nil {
				t.Fatalf("loaded %+v, want an error naming %s", c.Bridges, tc.path)
			}
			want := tc.path + ": must be a list, not a mapping (a mapping would be read as a single " + tc.what
			if !strings.Contains(err.Error(), "\n"+want) || !strings.Contains(err.Error(), `starting with "- "`) {
				t.Errorf("error %q does not contain %q and the fix", err, want)
			}
		})
	}
}

// TestLoadAcceptsListsAndScalars: the list forms, an explicit empty list and a single scalar
// for a list of scalars still load.
func TestLoadAcceptsListsAndScalars(t *testing.T) {
	doc := "bridges:\n  - name: br0\n    protocols: OpenFlow13\n    ports:\n      - name: p0\n        interfaces:\n          - name: p0\n"
	c, err := Load(context.Background(), Options{Data: []byte(doc)})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Bridges) != 1 || len(c.Bridges[0].Ports) != 1 || strings.Join(c.Bridges[0].Protocols, ",") != "OpenFlow13" {
		t.Errorf("loaded %+v", c.Bridges)
	}
	c, err = Load(context.Background(), Options{Data: []byte("bridges: []\n")})
	if err != nil || len(c.Bridges) != 0 {
		t.Errorf("bridges: [] → %+v, %v; want no bridges and no error", c, err)
	}
}
