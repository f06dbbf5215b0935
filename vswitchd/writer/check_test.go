package writer

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// TestPortDoorRefusesNUL (issue 12 item 3): a port with a NUL byte in external_ids, in one
// batch with valid neighbours, is refused alone — before anything is sent, naming the port and
// the key — and the neighbours are applied in one commit.
func TestPortDoorRefusesNUL(t *testing.T) {
	ctx, c := ovsdbEnv(t)
	clk := newFakeClock()
	pc := newDoor(c, 3)
	b := startPorts(t, ctx, pc, batch.Options[PortRequest]{MaxSize: 7, Linger: true, Clock: clk})
	specs := make([]ovsdb.PortOn, 9)
	for i := range specs {
		specs[i] = ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("n%d", i)}}
		switch i {
		case 4:
			specs[i].Port.ExternalIDs = map[string]string{"k": "a\x00b"}
		case 6:
			specs[i].Port.Interfaces = []model.Interface{{Name: "n6", Options: map[string]string{"x": "\xff"}}}
		}
	}
	results := submitEach(ctx, b, specs)
	for range 9 {
		x := <-results
		switch x.name {
		case "n4", "n6":
			if !errors.Is(x.err, ovsdb.ErrInvalid) || !errors.Is(x.err, limits.ErrBadText) || !strings.Contains(x.err.Error(), `"`+x.name+`"`) {
				t.Errorf("%s: %v, want ErrInvalid naming the port or interface", x.name, x.err)
			}
			if _, err := c.Interface(x.name); !errors.Is(err, ovsdb.ErrNotFound) {
				t.Errorf("%s was written: %v", x.name, err)
			}
		default:
			if x.err != nil || len(x.r.Interfaces) != 1 || x.r.Interfaces[0].Ofport <= 0 {
				t.Errorf("%s: %+v, %v; want an ofport", x.name, x.r, x.err)
			}
		}
	}
	if st := b.Stats(); st.Commits != 1 || st.Refused != 2 {
		t.Errorf("%d commits, %d refused; want the 7 good ports in 1 commit and 2 refused", st.Commits, st.Refused)
	}
}

// TestPortDoorCheck: what portDoor.Check refuses, with the port named.
func TestPortDoorCheck(t *testing.T) {
	pc := &portDoor{}
	many := make([]model.Interface, 100000)
	for i := range many {
		many[i].Name = fmt.Sprint("m", i)
	}
	for _, tc := range []struct {
		name string
		req  PortRequest
		want string
	}{
		{"ok", PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}}, ""},
		{"delete with NUL", PortRequest{Delete: true, Spec: ovsdb.PortOn{Port: model.Port{Name: "p\x001"}}}, "NUL byte"},
		{"dot", PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "."}}}, `"." and ".."`},
		{"zero width", PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Interfaces: []model.Interface{{Name: "p\u200b1"}}}}}, "U+200B"},
		{"100,000 interfaces", PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "b", Interfaces: many}}}, "100000 interfaces, more than 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := pc.Check(tc.req)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if w := pc.Weight(PortRequest{Spec: ovsdb.PortOn{Port: model.Port{Interfaces: many[:64]}}}); w != 65 {
		t.Errorf("weight of a 64-member bond: %d, want 65", w)
	}
}
