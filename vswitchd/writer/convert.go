package writer

import (
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// PortSpec is the ovsdb intent for port p of bridge: the port itself (the one Go shape of a
// port, model.Port) placed on its bridge. The reconciler's passes and the port door both use it.
func PortSpec(bridge string, p model.Port) ovsdb.PortOn {
	return ovsdb.PortOn{Bridge: bridge, Port: p}
}

// BridgeSpec is the ovsdb intent for bridge b: b without its ports, which are intents of their
// own (PortSpec).
func BridgeSpec(b model.Bridge) model.Bridge {
	b.Ports = nil
	return b
}
