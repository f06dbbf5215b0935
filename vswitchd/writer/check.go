package writer

import (
	"fmt"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// Check refuses a request OVS cannot take before it joins a batch (see Options.Check): a name
// package limits refuses, a port with more than limits.MaxInterfacesPerPort interfaces, a map
// with more than limits.MaxMapEntries entries besides ovsplane's own tags, and any NUL byte or
// invalid UTF-8 in a name, key or value (ovsdb-server drops the session on a NUL, failing every
// request of the transaction). The error matches ovsdb.ErrInvalid and *limits.Error and names
// the port. The values' lengths are the doors' business (desired.ValidatePort): the daemon's own
// spec tag may be longer than limits.MaxValueBytes.
//
// A request of a plugin object (More, Bridges) is checked port by port, and each bridge's name
// and map columns; it holds at most maxObjectRows ports and bridges.
func (p *portDoor) Check(r PortRequest) error {
	if n := len(r.More) + len(r.Bridges) + len(r.Drop) + len(r.DropBridges); n > maxObjectRows {
		return invalid(&limits.Error{Object: limits.Object(limits.Port, r.Spec.Port.Name), Field: "object",
			Reason: fmt.Sprintf("%d more ports and bridges, more than %d", n, maxObjectRows), Fix: "write a smaller object", Kind: limits.ErrTooLarge})
	}
	var probs limits.Problems
	for _, b := range r.Bridges {
		br := limits.Object(limits.Bridge, b.Name)
		probs.Add(limits.CheckName(limits.Bridge, b.Name))
		if !r.Delete {
			checkMapText(&probs, br, "other_config", b.OtherConfig)
			checkMapText(&probs, br, "external_ids", b.ExternalIDs)
		}
	}
	for _, on := range r.ports() {
		if err := checkPort(&probs, r.Delete, on); err != nil {
			return err
		}
	}
	for _, on := range r.Drop {
		_ = checkPort(&probs, true, on) // names only: never an early error
	}
	for _, b := range r.DropBridges {
		probs.Add(limits.CheckName(limits.Bridge, b))
	}
	return invalid(probs.Err())
}

// maxObjectRows bounds the ports and bridges of one request beside its first port.
const maxObjectRows = 64

// checkPort adds the problems of one port of a request to probs; a port with too many
// interfaces is returned at once.
func checkPort(probs *limits.Problems, del bool, on ovsdb.PortOn) error {
	port := limits.Object(limits.Port, on.Port.Name)
	probs.Add(limits.CheckText(port, "bridge", on.Bridge))
	if del {
		probs.Add(limits.CheckText(port, "name", on.Port.Name))
		return nil
	}
	probs.Add(limits.CheckName(limits.Port, on.Port.Name))
	if err := limits.CheckInterfaces(port, len(on.Port.Interfaces)); err != nil {
		return invalid(err) // 100,000 interfaces are not checked one by one
	}
	checkMapText(probs, port, "other_config", on.Port.OtherConfig)
	checkMapText(probs, port, "external_ids", on.Port.ExternalIDs)
	for _, in := range on.Port.Interfaces {
		probs.Add(limits.CheckName(limits.Interface, in.Name))
		ifc := limits.Object(limits.Interface, in.Name)
		probs.Add(limits.CheckText(ifc, "type", in.Type))
		checkMapText(probs, ifc, "options", in.Options)
		checkMapText(probs, ifc, "other_config", in.OtherConfig)
		checkMapText(probs, ifc, "external_ids", in.ExternalIDs)
	}
	return nil
}

// tagEntries is the room ovsplane's own external_ids tags (owner, generation, origin, spec…)
// take beside a user's limits.MaxMapEntries.
const tagEntries = 8

func checkMapText(p *limits.Problems, object, column string, m map[string]string) {
	if len(m) > limits.MaxMapEntries+tagEntries {
		p.Add(&limits.Error{Object: object, Field: column,
			Reason: fmt.Sprintf("%d entries, more than %d (limits.MaxMapEntries)", len(m), limits.MaxMapEntries),
			Fix:    "keep fewer keys", Kind: limits.ErrTooLarge})
		return
	}
	for k, v := range m {
		p.Add(limits.CheckText(object, fmt.Sprintf("%s key %q", column, k), k))
		p.Add(limits.CheckText(object, fmt.Sprintf("%s key %q: value", column, k), v))
	}
}

func invalid(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ovsdb.ErrInvalid, err)
}

// Weight is the number of OVSDB rows a request writes: the port and its interfaces (see
// Options.Weight; a batch holds at most limits.MaxObjectsPerBatch of them).
func (p *portDoor) Weight(r PortRequest) int {
	n := 2 * (len(r.Bridges) + len(r.Drop) + len(r.DropBridges)) // a bridge and its local port; a dropped port and its interface
	for _, on := range r.ports() {
		if r.Delete || len(on.Port.Interfaces) == 0 {
			n += 2 // the port and its one interface
		} else {
			n += 1 + len(on.Port.Interfaces)
		}
	}
	return n
}
