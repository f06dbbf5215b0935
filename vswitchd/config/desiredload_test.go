package config

import (
	"context"
	"reflect"
	"testing"

	"github.com/ovsplane/ovsplane/internal/desired"
)

// TestDesiredLoadMatchesLoad: for a file holding only bridges (what vsctl apply -f sends),
// desired.Load returns the bridges Load does, or the same error, word for word.
func TestDesiredLoadMatchesLoad(t *testing.T) {
	for _, doc := range []string{
		"bridges:\n  - name: br0\n    protocols: []\n    ports:\n      - name: p0\n        interfaces: [{name: p0, type: internal}]\n",
		"bridges:\n  - name: br0\n    datapath_type: netdev\n    ports:\n      - {name: d0, interfaces: [{name: d0, type: system}, {name: d1}], bond_mode: balance-tcp, trunks: [3, 1]}\n",
		"bridges: []\n",
		"bridges: {}\n",
		"bridges:\n  - name: br-with-a-name-too-long\n    fail_mode: open\n",
		"bridges:\n  - name: br0\n    colour: red\n",
		"bridges:\n  - name: br0\n    ports:\n      - name: p0\n        tag: 5000\n        interfaces: [{name: p0, type: dpdk}]\n",
		"bridges:\n  - name: br0\n    ports:\n      - name: p0\n        interfaces: [{name: p0, type: vdpa}]\n",
		"bridges: [\n",
		"bridges:\n  - name: br0\n    external_ids: {ovsplane-x: y}\n",
	} {
		st, derr := desired.Load("apply.yaml", []byte(doc))
		cfg, cerr := Load(context.Background(), Options{File: "apply.yaml", Data: []byte(doc)})
		switch {
		case (derr == nil) != (cerr == nil):
			t.Errorf("%q: desired.Load error %v, Load error %v", doc, derr, cerr)
		case derr != nil:
			if derr.Error() != cerr.Error() {
				t.Errorf("%q: desired.Load error\n%v\nLoad error\n%v", doc, derr, cerr)
			}
		case !reflect.DeepEqual(st.Bridges, cfg.Bridges):
			t.Errorf("%q: desired.Load bridges %+v, Load bridges %+v", doc, st.Bridges, cfg.Bridges)
		}
	}
}
