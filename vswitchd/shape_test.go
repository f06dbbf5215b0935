package vswitchd

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
)

func shapePort(name, bridge string) api.OVSPort {
	return api.OVSPort{Bridge: bridge, Name: name, Interfaces: []api.OVSInterface{{Name: name, Type: "internal"}}}
}

// TestShapeOfContract: the contract's rules for an object's shape, each refusal naming the
// plugin, the object and the rule; a good shape keeps the request's port-level settings on its
// first port only and places the others on their bridges.
func TestShapeOfContract(t *testing.T) {
	tag := 7
	req := model.Port{Name: "o1", Tag: &tag, Interfaces: []model.Interface{{Name: "o1", Type: "mp"}}}
	three := func() api.Attachment {
		return api.Attachment{Ports: []api.OVSPort{shapePort("o1", ""), shapePort("o1-x", "br0"), shapePort("o1-t", "o1-br")},
			Bridges: []api.OVSBridge{{Name: "o1-br", DatapathType: "netdev"}}}
	}
	sh, err := shapeOf("br0", req, "mp", three())
	if err != nil {
		t.Fatal(err)
	}
	if sh.first.Name != "o1" || sh.first.Tag == nil || *sh.first.Tag != 7 || len(sh.more) != 2 ||
		sh.more[0].Bridge != "br0" || sh.more[0].Port.Tag != nil || sh.more[1].Bridge != "o1-br" ||
		len(sh.bridges) != 1 || sh.bridges[0].DatapathType != "netdev" {
		t.Fatalf("shape: %+v", sh)
	}
	many := api.Attachment{Ports: []api.OVSPort{shapePort("o1", "")}}
	for i := 1; i <= MaxObjectPorts; i++ {
		many.Ports = append(many.Ports, shapePort(fmt.Sprintf("o1-%d", i), ""))
	}
	bridges := three()
	for i := 0; i < MaxObjectBridges; i++ {
		bridges.Bridges = append(bridges.Bridges, api.OVSBridge{Name: fmt.Sprintf("extra%d", i)})
	}
	for _, c := range []struct {
		name string
		edit func(*api.Attachment)
		a    *api.Attachment
		want string
	}{
		{"first port renamed", func(a *api.Attachment) { a.Ports[0] = shapePort("other", "") }, nil, `first port is named "other"`},
		{"first port elsewhere", func(a *api.Attachment) { a.Ports[0].Bridge = "o1-br" }, nil, `first port is on bridge "o1-br"`},
		{"port on a bridge not the object's", func(a *api.Attachment) { a.Ports[1].Bridge = "br-int" }, nil, `bridge "br-int", which is neither`},
		{"port named like a bridge", func(a *api.Attachment) { a.Ports[1] = shapePort("o1-br", "") }, nil, `has the name of bridge "o1-br"`},
		{"bridge named like the request's", func(a *api.Attachment) { a.Bridges[0].Name = "br0" }, nil, `the request's bridge`},
		{"reserved bridge key", func(a *api.Attachment) { a.Bridges[0].ExternalIDs = map[string]string{"ovsplane-x": "1"} }, nil, "reserved"},
		{"interface named like another port", func(a *api.Attachment) { a.Ports[2].Interfaces[0].Name = "o1-x" }, nil, `interface "o1-x" of port "o1-t"`},
		{"vlan_mode", func(a *api.Attachment) { a.Ports[1].VLANMode = "trunk" }, nil, "vlan_mode and lacp"},
		{"too many ports", nil, &many, "17 OVS ports, more than 16"},
		{"too many bridges", nil, &bridges, "5 bridges, more than 4"},
		{"no port", func(a *api.Attachment) { a.Ports = nil }, nil, "no OVS port"},
	} {
		a := three()
		if c.a != nil {
			a = *c.a
		} else {
			c.edit(&a)
		}
		_, err := shapeOf("br0", req, "mp", a)
		if !errors.Is(err, model.ErrFailed) || !strings.Contains(err.Error(), `plugin "mp"`) || !strings.Contains(err.Error(), `"o1"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrFailed naming plugin mp, o1 and %q", c.name, err, c.want)
		}
	}
}
