package ovsdb_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// TestBondSettings: a bond's typed settings become its bond_updelay/bond_downdelay columns
// and other_config keys next to the port's own keys; changes follow, dropping them removes
// them; invalid settings are refused naming the key.
func TestBondSettings(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil))
	yes := true
	bond := model.Port{Name: "bond0", BondMode: "balance-tcp", LACP: "active", OtherConfig: map[string]string{"x": "y"},
		Interfaces: []model.Interface{{Name: "e0"}, {Name: "e1"}},
		Bond: &model.Bond{Updelay: intp(200), Downdelay: intp(100), DetectMode: "miimon", MiimonInterval: intp(50),
			RebalanceInterval: intp(0), LACPTime: "fast", LACPFallbackAB: &yes, Primary: "e1"}}
	ensure := func(p model.Port) {
		t.Helper()
		commit(t, e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: p}))
	}
	expect := func(up, down int, oc map[string]string) {
		t.Helper()
		eventually(t, func() string {
			p, err := getPort(ctxT(t), e, "bond0")
			if err != nil {
				return err.Error()
			}
			if p.BondUpdelay != up || p.BondDowndelay != down || !maps.Equal(p.OtherConfig, oc) {
				return fmt.Sprintf("bond0 updelay %d downdelay %d other_config %v, want %d %d %v", p.BondUpdelay, p.BondDowndelay, p.OtherConfig, up, down, oc)
			}
			return ""
		})
	}
	ensure(bond)
	expect(200, 100, map[string]string{"x": "y", "bond-detect-mode": "miimon", "bond-miimon-interval": "50",
		"bond-rebalance-interval": "0", "lacp-time": "fast", "lacp-fallback-ab": "true", "bond-primary": "e1"})
	bond.Bond = &model.Bond{Updelay: intp(300), LACPTime: "slow"}
	ensure(bond)
	expect(300, 0, map[string]string{"x": "y", "lacp-time": "slow"})
	bond.Bond = nil
	ensure(bond)
	expect(0, 0, map[string]string{"x": "y"})

	for _, bad := range []struct {
		p   model.Port
		key string
	}{
		{model.Port{Name: "b1", Interfaces: []model.Interface{{Name: "b1"}}, Bond: &model.Bond{}}, "bond: set on a port with 1 interface"},
		{model.Port{Name: "b1", Interfaces: []model.Interface{{Name: "f0"}, {Name: "f1"}}, Bond: &model.Bond{Primary: "f2"}}, "bond.primary"},
		{model.Port{Name: "b1", Interfaces: []model.Interface{{Name: "f0"}, {Name: "f1"}}, Bond: &model.Bond{LACPTime: "fast"}}, "bond.lacp_time"},
		{model.Port{Name: "b1", BondMode: "active-backup", Interfaces: []model.Interface{{Name: "f0"}, {Name: "f1"}}, Bond: &model.Bond{RebalanceInterval: intp(10)}}, "bond.rebalance_interval"},
		{model.Port{Name: "b1", Interfaces: []model.Interface{{Name: "f0"}, {Name: "f1"}}, Bond: &model.Bond{Updelay: intp(-1)}}, "bond.updelay"},
		{model.Port{Name: "b1", OtherConfig: map[string]string{"lacp-time": "fast"}, Interfaces: []model.Interface{{Name: "f0"}, {Name: "f1"}}, Bond: &model.Bond{}}, "other_config.lacp-time"},
	} {
		_, err := e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: bad.p}).Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("EnsurePort(%+v): %v, want ErrInvalid naming %s", bad.p, err, bad.key)
		}
	}
}
