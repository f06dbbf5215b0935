package writer

import (
	"errors"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

func tap(name string) model.Port {
	return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: "dpdk",
		Options: map[string]string{"dpdk-devargs": "net_tap_" + name}}}}
}

// TestObjectRequest: a request of a plugin object (More ports, Bridges) is one item of a batch:
// its bridge and ports are created in the batch's transaction with its interfaces' ofports in
// the result; when one of its rows is refused (a foreign port holds a name) the whole request
// fails and nothing of it is written, while its neighbour in the batch is committed; a new
// shape drops the rows the old one had in the same request; deleting it removes its ports and
// its bridge together. Check and Weight count all its rows.
func TestObjectRequest(t *testing.T) {
	ctx, c := ovsdbEnv(t)
	door := newDoor(c, 1)
	obj := PortRequest{Spec: PortSpec("br0", tap("o1")), More: []ovsdb.PortOn{PortSpec("br0", tap("o1-x")), PortSpec("o1-br", tap("o1-t"))},
		Bridges: []model.Bridge{{Name: "o1-br", DatapathType: "netdev"}}}
	if w := door.Weight(obj); w != 8 {
		t.Errorf("Weight = %d, want 8 (3 ports with an interface each, a bridge with its local port)", w)
	}
	bad := obj
	bad.Bridges = []model.Bridge{{Name: "o1\x00br"}}
	if err := door.Check(bad); !errors.Is(err, ovsdb.ErrInvalid) {
		t.Errorf("Check of a NUL in a bridge name: %v", err)
	}

	// A foreign port holds o2-x: object o2 is refused whole, o1 beside it is written.
	other, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{c.Endpoint()}, Owner: "someone-else", AttachToForeignBridges: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.NewTxn(1).EnsurePort(PortSpec("br0", tap("o2-x"))).Commit(ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	o2 := PortRequest{Spec: PortSpec("br0", tap("o2")), More: []ovsdb.PortOn{PortSpec("br0", tap("o2-x")), PortSpec("o2-br", tap("o2-t"))},
		Bridges: []model.Bridge{{Name: "o2-br", DatapathType: "netdev"}}}
	b := startPorts(t, ctx, door, batch.Options[PortRequest]{MaxSize: 2, Clock: newFakeClock(), Linger: true})
	res := make(chan error, 1)
	go func() { _, err := b.Submit(ctx, o2); res <- err }()
	r1, err := b.Submit(ctx, obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Interfaces) != 3 || r1.Interfaces[0].Name != "o1" || r1.Interfaces[2].Name != "o1-t" || r1.Interfaces[2].Ofport <= 0 {
		t.Errorf("o1's interfaces: %+v", r1.Interfaces)
	}
	if err := <-res; !errors.Is(err, ovsdb.ErrNotOwned) || !strings.Contains(err.Error(), "o2-x") {
		t.Errorf("o2: %v, want ErrNotOwned naming o2-x", err)
	}
	for _, n := range []string{"o2", "o2-t"} {
		if _, err := c.Interface(n); err == nil {
			t.Errorf("interface %s of the refused object was written", n)
		}
	}
	if _, ok := c.Tags("Bridge", "o2-br"); ok {
		t.Errorf("bridge o2-br of the refused object was written")
	}

	// o1 changes shape: the port on its bridge and the bridge go, in the request that keeps
	// the rest.
	reshaped := PortRequest{Spec: PortSpec("br0", tap("o1")), More: []ovsdb.PortOn{PortSpec("br0", tap("o1-x"))},
		Drop: []ovsdb.PortOn{{Bridge: "o1-br", Port: model.Port{Name: "o1-t"}}}, DropBridges: []string{"o1-br"}}
	go func() { _, err := b.Submit(ctx, reshaped); res <- err }()
	if _, err := b.Submit(ctx, PortRequest{Spec: PortSpec("br0", tap("p8"))}); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Tags("Port", "o1-t"); ok {
		t.Errorf("port o1-t of the previous shape still there")
	}
	if _, ok := c.Tags("Bridge", "o1-br"); ok {
		t.Errorf("bridge o1-br of the previous shape still there")
	}
	if _, ok := c.Tags("Port", "o1-x"); !ok {
		t.Errorf("port o1-x, kept by the new shape, is gone")
	}

	// Deleting o1 removes its ports and its bridge.
	del := PortRequest{Delete: true, Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "o1"}},
		More:    []ovsdb.PortOn{{Bridge: "br0", Port: model.Port{Name: "o1-x"}}, {Bridge: "o1-br", Port: model.Port{Name: "o1-t"}}},
		Bridges: []model.Bridge{{Name: "o1-br"}}}
	go func() { _, err := b.Submit(ctx, del); res <- err }()
	if _, err := b.Submit(ctx, PortRequest{Spec: PortSpec("br0", tap("p9"))}); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"o1", "o1-x", "o1-t"} {
		if _, ok := c.Tags("Port", n); ok {
			t.Errorf("port %s still there after the object's deletion", n)
		}
	}
	if _, ok := c.Tags("Bridge", "o1-br"); ok {
		t.Errorf("bridge o1-br still there after the object's deletion")
	}
}
