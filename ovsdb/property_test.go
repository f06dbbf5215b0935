package ovsdb_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
	"github.com/ovsplane/ovsplane/test/lab"
)

// newRealEnv is newEnv against a real ovsdb-server (no ovs-vswitchd), whose "wait" semantics
// the in-memory server only approximates.
func newRealEnv(t *testing.T) *env {
	t.Helper()
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{db.Endpoint}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	foreign, err := ovsdbtest.Dial(ctx, db.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(foreign.Close)
	return &env{c: c, foreign: foreign}
}

// desired is a whole desired state: bridges by name, ports by name.
type desired struct {
	bridges map[string]model.Bridge
	ports   map[string]ovsdb.PortOn
}

// randomState draws a desired state from a small name space, so that consecutive states share
// names and exercise updates, moves between bridges, interface changes and deletions.
func randomState(r *rand.Rand) desired {
	d := desired{bridges: map[string]model.Bridge{}, ports: map[string]ovsdb.PortOn{}}
	for _, b := range []string{"br0", "br1", "br2"} {
		if r.IntN(4) == 0 {
			continue
		}
		spec := model.Bridge{Name: b}
		if r.IntN(2) == 0 {
			spec.DatapathType = "netdev"
		}
		if r.IntN(3) == 0 {
			spec.FailMode = []string{"secure", "standalone"}[r.IntN(2)]
		}
		if r.IntN(2) == 0 {
			spec.OtherConfig = map[string]string{"k": fmt.Sprint(r.IntN(3))}
		}
		if r.IntN(3) == 0 {
			spec.Protocols = [][]string{{"OpenFlow13"}, {"OpenFlow10", "OpenFlow13"}}[r.IntN(2)]
		}
		d.bridges[b] = spec
	}
	bridges := slices.Sorted(maps.Keys(d.bridges))
	if len(bridges) == 0 {
		return d
	}
	used := map[string]bool{}
	for i := range 6 {
		if r.IntN(3) == 0 {
			continue
		}
		name := fmt.Sprintf("p%d", i)
		spec := ovsdb.PortOn{Bridge: bridges[r.IntN(len(bridges))], Port: model.Port{Name: name}}
		n := 1 + r.IntN(3)
		for j := range n {
			// Interface names come from a shared pool so they move between ports over time.
			ifn := fmt.Sprintf("if%d", r.IntN(10))
			if n == 1 && j == 0 && r.IntN(2) == 0 {
				ifn = name
			}
			if used[ifn] {
				continue
			}
			used[ifn] = true
			is := model.Interface{Name: ifn}
			switch r.IntN(3) {
			case 0:
				is.Type = "internal"
			case 1:
				is.Options = map[string]string{"o": fmt.Sprint(r.IntN(2))}
			}
			if r.IntN(3) == 0 {
				is.MTURequest = ptr(1400 + r.IntN(2)*100)
			}
			spec.Port.Interfaces = append(spec.Port.Interfaces, is)
		}
		if len(spec.Port.Interfaces) == 0 {
			continue
		}
		if len(spec.Port.Interfaces) > 1 {
			spec.Port.BondMode = "active-backup"
		}
		if r.IntN(3) == 0 {
			spec.Port.Tag = ptr(r.IntN(3))
		}
		d.ports[name] = spec
	}
	return d
}

// apply reconciles toward d in one transaction: delete owned ports and bridges that are not
// desired, then ensure everything desired — the daemon's reconcile in miniature.
func apply(t *testing.T, e *env, gen int64, d desired) *ovsdb.Result {
	t.Helper()
	tx := e.c.NewTxn(gen)
	for _, r := range e.c.Owned() {
		switch r.Table {
		case vswitch.PortTable:
			if _, ok := d.ports[r.Name]; !ok {
				if _, isLocal := d.bridges[r.Name]; !isLocal && !isBridge(e, r.Name) {
					tx.DeletePort("", r.Name)
				}
			}
		case vswitch.BridgeTable:
			if _, ok := d.bridges[r.Name]; !ok {
				tx.DeleteBridge(r.Name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.bridges)) {
		tx.EnsureBridge(d.bridges[name], nil)
	}
	for _, name := range slices.Sorted(maps.Keys(d.ports)) {
		tx.EnsurePort(d.ports[name])
	}
	return commit(t, tx)
}

// isBridge reports whether name is an owned bridge (its local port is managed with it).
func isBridge(e *env, name string) bool {
	for _, r := range e.c.Owned() {
		if r.Table == vswitch.BridgeTable && r.Name == name {
			return true
		}
	}
	return false
}

// describe renders what the database holds, as seen by the foreign client, in spec terms.
func describe(t *testing.T, e *env) string {
	t.Helper()
	ctx := ctxT(t)
	var bridges []vswitch.Bridge
	var ports []vswitch.Port
	var ifaces []vswitch.Interface
	if err := e.foreign.List(ctx, &bridges); err != nil {
		t.Fatal(err)
	}
	_ = e.foreign.List(ctx, &ports)
	_ = e.foreign.List(ctx, &ifaces)
	portByUUID := map[string]vswitch.Port{}
	for _, p := range ports {
		portByUUID[p.UUID] = p
	}
	ifByUUID := map[string]vswitch.Interface{}
	for _, i := range ifaces {
		ifByUUID[i.UUID] = i
	}
	var lines []string
	for _, b := range bridges {
		lines = append(lines, fmt.Sprintf("bridge %s dp=%s fail=%s proto=%v oc=%v", b.Name, b.DatapathType,
			derefStr(b.FailMode), sortedProtos(b.Protocols), b.OtherConfig))
		for _, pu := range b.Ports {
			p := portByUUID[pu]
			if p.Name == b.Name {
				continue
			}
			var ifs []string
			for _, iu := range p.Interfaces {
				i := ifByUUID[iu]
				ifs = append(ifs, fmt.Sprintf("%s:%s:%v:%s", i.Name, i.Type, i.Options, intStr(i.MTURequest)))
			}
			slices.Sort(ifs)
			lines = append(lines, fmt.Sprintf("port %s on %s tag=%s bond=%s if=%v", p.Name, b.Name, intStr(p.Tag),
				derefStr(p.BondMode), ifs))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// expected renders d the way describe renders the database.
func expected(d desired) string {
	var lines []string
	for _, b := range d.bridges {
		protos := slices.Clone(b.Protocols)
		slices.Sort(protos)
		lines = append(lines, fmt.Sprintf("bridge %s dp=%s fail=%s proto=%v oc=%v", b.Name, b.DatapathType, b.FailMode,
			protos, nilIfEmpty(b.OtherConfig)))
	}
	for _, p := range d.ports {
		var ifs []string
		for _, i := range p.Port.Interfaces {
			ifs = append(ifs, fmt.Sprintf("%s:%s:%v:%s", i.Name, i.Type, nilIfEmpty(i.Options), intStr(i.MTURequest)))
		}
		slices.Sort(ifs)
		lines = append(lines, fmt.Sprintf("port %s on %s tag=%s bond=%s if=%v", p.Port.Name, p.Bridge, intStr(p.Port.Tag), p.Port.BondMode, ifs))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return map[string]string{}
	}
	return m
}

func sortedProtos(p []vswitch.BridgeProtocols) []string {
	out := make([]string, len(p))
	for i, v := range p {
		out[i] = string(v)
	}
	slices.Sort(out)
	return out
}

func derefStr[T ~string](v *T) string {
	if v == nil {
		return ""
	}
	return string(*v)
}

func intStr(v *int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// TestRandomDesiredStatesConverge walks through random desired states (bridges appearing and
// disappearing, ports moving between bridges, interfaces moving between ports, bonds forming and
// splitting, columns changing) and checks after every step that the database says exactly what
// was desired, and that applying the same state again sends no operation.
func TestRandomDesiredStatesConverge(t *testing.T) {
	servers := []struct {
		name  string
		seeds uint64
		env   func(*testing.T, ...func(*ovsdb.Config)) *env
	}{
		{"in-memory", 8, newEnv},
		{"ovsdb-server", 3, func(t *testing.T, _ ...func(*ovsdb.Config)) *env { return newRealEnv(t) }},
	}
	for _, srv := range servers {
		for seed := range srv.seeds {
			t.Run(fmt.Sprintf("%s/seed%d", srv.name, seed), func(t *testing.T) {
				convergeFrom(t, srv.env(t), seed)
			})
		}
	}
}

// convergeFrom applies 25 random desired states drawn from seed, checking each.
func convergeFrom(t *testing.T, e *env, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 42))
	for step := range 25 {
		d := randomState(r)
		apply(t, e, int64(step+1), d)
		want := expected(d)
		eventually(t, func() string {
			if got := describe(t, e); got != want {
				return fmt.Sprintf("seed %d step %d: database\n%s\nwant\n%s", seed, step, got, want)
			}
			return ""
		})
		if res := apply(t, e, int64(step+1), d); res.Ops != 0 {
			t.Fatalf("seed %d step %d: re-applying the same state sent %d operations", seed, step, res.Ops)
		}
	}
}
