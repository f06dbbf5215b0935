package ovsdb_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// controllersOf returns target → owner tag of the Controller rows bridge refers to, once the
// foreign client's cache shows want targets (sorted, comma-joined).
func controllersOf(t *testing.T, e *env, bridge, want string) map[string]string {
	t.Helper()
	var out map[string]string
	eventually(t, func() string {
		b := &vswitch.Bridge{Name: bridge}
		if err := e.foreign.Get(ctxT(t), b); err != nil {
			return err.Error()
		}
		out = map[string]string{}
		var targets []string
		for _, u := range b.Controller {
			c := &vswitch.Controller{UUID: u}
			if err := e.foreign.Get(ctxT(t), c); err != nil {
				return fmt.Sprintf("controller %s: %v", u, err)
			}
			out[c.Target] = c.ExternalIDs[ovsdb.OwnerKey]
			targets = append(targets, c.Target)
		}
		slices.Sort(targets)
		if got := strings.Join(targets, ","); got != want {
			return fmt.Sprintf("controllers of %s: %q, want %q", bridge, got, want)
		}
		return ""
	})
	return out
}

func TestBridgeControllers(t *testing.T) {
	e := newEnv(t)
	const a, b, f = "tcp:127.0.0.1:6653", "unix:/run/ctl.sock", "tcp:192.0.2.9:6653"
	ensure := func(targets ...string) *ovsdb.Result {
		t.Helper()
		res, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", FailMode: "secure", Controllers: targets}, nil).
			Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if err != nil {
			t.Fatalf("EnsureBridge(%v, nil): %v", targets, err)
		}
		return res
	}
	ensure(a, b)
	for target, owner := range controllersOf(t, e, "br0", a+","+b) {
		if owner != ovsdb.DefaultOwner {
			t.Errorf("controller %s owned by %q, want %q", target, owner, ovsdb.DefaultOwner)
		}
	}
	if fm := getBridge(t, e, "br0").FailMode; fm == nil || *fm != "secure" {
		t.Errorf("fail_mode %v, want secure", fm)
	}
	if res := ensure(a, b); res.Ops != 0 {
		t.Errorf("ensuring the same controllers again sent %d operations, want none", res.Ops)
	}

	// Someone adds a controller of their own to the bridge.
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		ctl := &vswitch.Controller{UUID: "fctl", Target: f}
		ops, err := e.foreign.Create(ctl)
		if err != nil {
			return nil, err
		}
		br := getBridge(t, e, "br0")
		mut, err := e.foreign.Where(br).Mutate(br, libmodel.Mutation{
			Field: &br.Controller, Mutator: libovsdb.MutateOperationInsert, Value: []string{"fctl"}})
		return append(ops, mut...), err
	})
	controllersOf(t, e, "br0", a+","+f+","+b)
	// Dropping b removes only our row for b; asking for f (theirs) adds no duplicate.
	ensure(a, f)
	got := controllersOf(t, e, "br0", a+","+f)
	if got[f] != "" {
		t.Errorf("foreign controller %s was tagged %q", f, got[f])
	}
	ensure()
	controllersOf(t, e, "br0", f)

	// Invalid targets are refused before anything is sent.
	for _, bad := range []string{"tcp:127.0.0.1:99999", "tcp:127.0.0.1:6653\n", "ftp:x"} {
		_, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", Controllers: []string{bad}}, nil).
			Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), `bridge "br0"`) {
			t.Errorf("EnsureBridge with controller %q: %v, want ErrInvalid naming the bridge", bad, err)
		}
	}
	_, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", Controllers: []string{a, a}}, nil).
		Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
	if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("EnsureBridge with a duplicate controller: %v, want ErrInvalid", err)
	}
	controllersOf(t, e, "br0", f)
}
