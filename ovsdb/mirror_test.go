package ovsdb_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// TestBridgeMirrors: a mirror naming ports created in the same transaction is created with the
// bridge, tagged, its ports resolved; it is updated in place, unlinked (garbage collected) when
// dropped; a mirror someone else created is never touched and is reported; a bad mirror is
// refused naming the key.
func TestBridgeMirrors(t *testing.T) {
	e := newEnv(t)
	m := model.Mirror{Name: "span", SelectSrcPorts: []string{"p1"}, SelectDstPorts: []string{"p1", "p2"},
		SelectVLANs: []int{10}, OutputPort: "p3"}
	br := model.Bridge{Name: "br0", Mirrors: []model.Mirror{m}}
	tx := e.c.NewTxn(1).EnsureBridge(br, nil)
	for _, n := range []string{"p1", "p2", "p3"} {
		tx.EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: n}})
	}
	commit(t, tx)
	want := m.Canonical()
	eventually(t, func() string {
		got, ok := e.c.BridgeMirrors()["br0"]["span"]
		if !ok || !got.Owned || !reflect.DeepEqual(got.Mirror, want) {
			return fmt.Sprintf("mirror span %+v (owned %v), want %+v owned", got.Mirror, got.Owned, want)
		}
		return ""
	})

	// In place: select all, output to a VLAN.
	m2 := model.Mirror{Name: "span", SelectAll: true, OutputVLAN: intp(99), Snaplen: intp(128)}
	br.Mirrors = []model.Mirror{m2}
	commit(t, e.c.NewTxn(1).EnsureBridge(br, nil))
	eventually(t, func() string {
		got := e.c.BridgeMirrors()["br0"]["span"]
		if !reflect.DeepEqual(got.Mirror, m2.Canonical()) {
			return fmt.Sprintf("mirror %+v, want %+v", got.Mirror, m2.Canonical())
		}
		if n := rowsIn[vswitch.Mirror](t, e); n != 1 {
			return fmt.Sprintf("%d mirror rows, want 1 (updated in place)", n)
		}
		return ""
	})
	if res := commit(t, e.c.NewTxn(1).EnsureBridge(br, nil)); res.Ops != 0 {
		t.Errorf("unchanged mirror planned %d operations, want 0", res.Ops)
	}

	// Dropped: unlinked, and OVSDB deletes the row.
	br.Mirrors = nil
	commit(t, e.c.NewTxn(1).EnsureBridge(br, nil))
	eventually(t, func() string {
		if n := rowsIn[vswitch.Mirror](t, e); n != 0 {
			return fmt.Sprintf("%d mirror rows, want 0", n)
		}
		return ""
	})

	// Someone else's mirror named like a desired one: never touched, reported as not owned.
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		ops, err := e.foreign.Create(&vswitch.Mirror{UUID: "fm", Name: "span", SelectAll: true, OutputVLAN: intp(5)})
		if err != nil {
			return nil, err
		}
		b := getBridge(t, e, "br0")
		b.Mirrors = []string{"fm"}
		upd, err := e.foreign.Where(b).Update(b, &b.Mirrors)
		return append(ops, upd...), err
	})
	eventually(t, func() string {
		if got, ok := e.c.BridgeMirrors()["br0"]["span"]; !ok || got.Owned {
			return fmt.Sprintf("foreign mirror %+v %v", got, ok)
		}
		return ""
	})
	br.Mirrors = []model.Mirror{m}
	commit(t, e.c.NewTxn(1).EnsureBridge(br, nil))
	br.Mirrors = nil
	commit(t, e.c.NewTxn(1).EnsureBridge(br, nil))
	if got := e.c.BridgeMirrors()["br0"]["span"]; got.Owned || got.Mirror.OutputVLAN == nil || *got.Mirror.OutputVLAN != 5 || rowsIn[vswitch.Mirror](t, e) != 1 {
		t.Errorf("foreign mirror became %+v", got)
	}

	for _, bad := range []model.Mirror{
		{Name: "x", OutputPort: "p3"},
		{Name: "x", SelectAll: true},
		{Name: "x", SelectAll: true, OutputPort: "p3", OutputVLAN: intp(3)},
		{Name: "x", SelectSrcPorts: []string{"p3"}, OutputPort: "p3"},
		{Name: "", SelectAll: true, OutputVLAN: intp(3)},
	} {
		_, err := e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0", Mirrors: []model.Mirror{bad}}, nil).Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), `bridge "br0": mirrors[0].`) {
			t.Errorf("EnsureBridge(mirror %+v): %v, want ErrInvalid naming the key", bad, err)
		}
	}
}
