package vdpaplugin

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vdpa"
)

// TestStateForms: a state is stored in the first form that fits — JSON with the OVS shape,
// without it, gzipped — and every form decodes to the same records to undo; a state too big
// for any is refused with FailedPrecondition; garbage is refused on decode.
func TestStateForms(t *testing.T) {
	mk := func(vfs int) *vdpa.State {
		st := &vdpa.State{Version: vdpa.StateVersion, Request: vdpa.Request{Name: "vm1", PF: pf0, Mode: vdpa.ModeKernel},
			PF: pf0, VF: "0000:65:00.3", VFIndex: 1,
			OVS:     vdpa.OVSPlan{Interface: vdpa.OVSInterface{Name: "vm1", Type: "dpdk", Options: map[string]string{"dpdk-devargs": pf0 + ",representor=vf1"}}},
			Process: &vdpa.Process{Argv: []string{"dpdk-vdpa", strings.Repeat("x", 300)}}}
		for i := range vfs {
			st.Done = append(st.Done, vdpa.Step{Op: vdpa.OpPCIBind, Scope: vdpa.ScopePF, Driver: "mlx5_core",
				Object: fmt.Sprintf("0000:%02x:%02x.%d", 0x65+i/64, i/8%8, i%8), What: "bind a VF", Why: "because"})
		}
		return st
	}
	for _, c := range []struct {
		vfs       int
		shape, gz bool
	}{{2, true, false}, {16, false, false}, {120, false, true}} {
		st := mk(c.vfs)
		b, err := encodeState(st)
		if err != nil || len(b) > api.MaxStateSize {
			t.Fatalf("%d VFs: %d bytes, %v", c.vfs, len(b), err)
		}
		got := mustDecode(t, b)
		if gz := strings.HasPrefix(string(b), gzipPrefix); gz != c.gz || (got.OVS.Interface.Name != "") != c.shape {
			t.Errorf("%d VFs: gz %v, shape %q", c.vfs, gz, got.OVS.Interface.Name)
		}
		if !reflect.DeepEqual(got.Done, compact(st, true).Done) {
			t.Errorf("%d VFs: records differ after the round trip", c.vfs)
		}
		if again, _ := encodeState(got); string(again) != string(b) && c.shape {
			t.Errorf("%d VFs: re-encoding the decoded state differs", c.vfs)
		}
	}
	huge := mk(2)
	for i := range 2000 {
		huge.Done = append(huge.Done, vdpa.Step{Op: vdpa.OpSetAttr, Object: fmt.Sprintf("sys/x/%d-%x", i, i*7919), From: fmt.Sprint(i), To: fmt.Sprint(i * 31)})
	}
	if _, err := encodeState(huge); api.CodeOf(err) != api.FailedPrecondition {
		t.Errorf("huge state: %v", err)
	}
	for _, bad := range []string{`{`, `{"version":9,"request":{"name":"vm1"},"pf":"x"}`, `{"version":1}`, "gz:!!!"} {
		if _, err := decodeState([]byte(bad)); err == nil {
			t.Errorf("decoded %q", bad)
		}
	}
}

// TestCompactDropsRepeatedRecords: a record repeated by a later one (a replay redoing work the
// host lost) is kept once, the later one.
func TestCompactDropsRepeatedRecords(t *testing.T) {
	a := vdpa.Step{Op: vdpa.OpSetAttr, Scope: vdpa.ScopePF, Object: "sys/bus/pci/devices/" + pf0 + "/sriov_numvfs", From: "0", To: "2"}
	b := vdpa.Step{Op: vdpa.OpVDPAAdd, Scope: vdpa.ScopePort, Object: "vm1"}
	st := &vdpa.State{Done: []vdpa.Step{a, b, a, b}}
	if got := compact(st, false).Done; !reflect.DeepEqual(got, []vdpa.Step{a, b}) {
		t.Errorf("got %+v", got)
	}
}
