package ovsdb_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

func rootRow(t *testing.T, e *env) *vswitch.OpenvSwitch {
	t.Helper()
	var rows []vswitch.OpenvSwitch
	if err := e.foreign.List(ctxT(t), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("Open_vSwitch rows: %v (%d)", err, len(rows))
	}
	return &rows[0]
}

func TestGlobalOtherConfigOwnership(t *testing.T) {
	e := newEnv(t)
	// An operator's key, set before us.
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		root := rootRow(t, e)
		return e.foreign.Where(root).Mutate(root, libmodel.Mutation{Field: &root.OtherConfig,
			Mutator: libovsdb.MutateOperationInsert, Value: map[string]string{"vlan-limit": "2"}})
	})
	commit(t, e.c.NewTxn(1).SetGlobal(map[string]string{
		ovsdb.DPDKInit: "true", ovsdb.DPDKSocketMem: "1024", ovsdb.DPDKExtra: "--no-pci", ovsdb.PMDCPUMask: "0x2"}))
	commit(t, e.c.NewTxn(2).SetGlobal(map[string]string{ovsdb.DPDKSocketMem: "512"}))
	eventually(t, func() string {
		got, err := e.c.OwnedGlobal(ctxT(t))
		if err != nil {
			return err.Error()
		}
		want := map[string]string{ovsdb.DPDKInit: "true", ovsdb.DPDKSocketMem: "512", ovsdb.DPDKExtra: "--no-pci", ovsdb.PMDCPUMask: "0x2"}
		if !maps.Equal(got, want) {
			return "OwnedGlobal mismatch"
		}
		return ""
	})
	if got := rootRow(t, e).OtherConfig["vlan-limit"]; got != "2" {
		t.Errorf("operator's vlan-limit = %q, want it untouched", got)
	}
	_, err := e.c.NewTxn(3).UnsetGlobal("vlan-limit").Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
	if !errors.Is(err, ovsdb.ErrNotOwned) {
		t.Errorf("UnsetGlobal of a foreign key: err = %v, want ErrNotOwned", err)
	}
	commit(t, e.c.NewTxn(3).UnsetGlobal(ovsdb.PMDCPUMask, "never-set"))
	eventually(t, func() string {
		oc := rootRow(t, e).OtherConfig
		if _, ok := oc[ovsdb.PMDCPUMask]; ok || oc["vlan-limit"] != "2" || oc[ovsdb.DPDKInit] != "true" {
			return "other_config after UnsetGlobal wrong"
		}
		return ""
	})
}

func TestSpecErrorsNameObjectAndChangeNothing(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		tx   *ovsdb.Txn
		kind error
		want string
	}{
		{"empty bridge name", e.c.NewTxn(1).EnsureBridge(model.Bridge{}, nil), ovsdb.ErrInvalid, "bridge name is empty"},
		{"bad fail mode", e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", FailMode: "open"}, nil), ovsdb.ErrInvalid, `bridge "br0"`},
		{"reserved key", e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", ExternalIDs: map[string]string{ovsdb.OwnerKey: "x"}}, nil), ovsdb.ErrInvalid, "reserved"},
		{"port without bridge", e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Port: model.Port{Name: "p1"}}), ovsdb.ErrInvalid, `port "p1"`},
		{"missing bridge", e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "nope", Port: model.Port{Name: "p1"}}), ovsdb.ErrNotFound, `"nope"`},
		{"bad tag", e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Tag: ptr(5000)}}), ovsdb.ErrInvalid, "tag 5000"},
		{"ofport_request range", e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1",
			Interfaces: []model.Interface{{Name: "p1", OFPortRequest: ptr(70000)}}}}), ovsdb.ErrInvalid, `interface "p1"`},
		{"interface twice", e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).
			EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "a", Interfaces: []model.Interface{{Name: "x"}}}}).
			EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "b", Interfaces: []model.Interface{{Name: "x"}}}}), ovsdb.ErrConstraintViolation, `"x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.tx.Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	var bridges []vswitch.Bridge
	if err := e.foreign.List(ctxT(t), &bridges); err != nil || len(bridges) != 0 {
		t.Errorf("failed transactions left %d bridges (%v)", len(bridges), err)
	}
}

func TestGlobalKeysOfOthersAreNeverTakenOver(t *testing.T) {
	e := newEnv(t)
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		root := rootRow(t, e)
		return e.foreign.Where(root).Mutate(root, libmodel.Mutation{Field: &root.OtherConfig,
			Mutator: libovsdb.MutateOperationInsert, Value: map[string]string{ovsdb.PMDCPUMask: "0xf0"}})
	})
	eventually(t, func() string {
		_, err := e.c.NewTxn(1).SetGlobal(map[string]string{ovsdb.PMDCPUMask: "0x2"}).Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if !errors.Is(err, ovsdb.ErrNotOwned) {
			return "SetGlobal over an operator's key: err = " + fmtErr(err) + ", want ErrNotOwned"
		}
		if !strings.Contains(err.Error(), ovsdb.PMDCPUMask) {
			return "error does not name the key: " + err.Error()
		}
		return ""
	})
	if got := rootRow(t, e).OtherConfig[ovsdb.PMDCPUMask]; got != "0xf0" {
		t.Errorf("operator's pmd-cpu-mask = %q, want 0xf0 untouched", got)
	}
}

func TestGlobalIntentsMergeInOneTransaction(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).
		SetGlobal(map[string]string{"ovsplane-test-a": "1"}).
		SetGlobal(map[string]string{"ovsplane-test-b": "2"}).
		SetGlobal(map[string]string{"ovsplane-test-c": "3"}).
		UnsetGlobal("ovsplane-test-c"))
	eventually(t, func() string {
		got, err := e.c.OwnedGlobal(ctxT(t))
		if err != nil {
			return err.Error()
		}
		if !maps.Equal(got, map[string]string{"ovsplane-test-a": "1", "ovsplane-test-b": "2"}) {
			return "OwnedGlobal = " + fmtMap(got) + ", want a=1 b=2"
		}
		if _, ok := rootRow(t, e).OtherConfig["ovsplane-test-c"]; ok {
			return "key set then unset in one transaction is present"
		}
		return ""
	})
	if _, err := e.c.NewTxn(1).SetGlobal(map[string]string{"a,b": "x"}).Commit(ctxT(t), ovsdb.CommitOptions{}); !errors.Is(err, ovsdb.ErrInvalid) {
		t.Errorf("key with a comma: err = %v, want ErrInvalid", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func fmtMap(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}
