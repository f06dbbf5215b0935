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
func (p *portDoor) Check(r PortRequest) error {
	var probs limits.Problems
	port := limits.Object(limits.Port, r.Spec.Port.Name)
	probs.Add(limits.CheckText(port, "bridge", r.Spec.Bridge))
	if r.Delete {
		probs.Add(limits.CheckText(port, "name", r.Spec.Port.Name))
		return invalid(probs.Err())
	}
	probs.Add(limits.CheckName(limits.Port, r.Spec.Port.Name))
	if err := limits.CheckInterfaces(port, len(r.Spec.Port.Interfaces)); err != nil {
		return invalid(err) // 100,000 interfaces are not checked one by one
	}
	checkMapText(&probs, port, "other_config", r.Spec.Port.OtherConfig)
	checkMapText(&probs, port, "external_ids", r.Spec.Port.ExternalIDs)
	for _, in := range r.Spec.Port.Interfaces {
		probs.Add(limits.CheckName(limits.Interface, in.Name))
		ifc := limits.Object(limits.Interface, in.Name)
		probs.Add(limits.CheckText(ifc, "type", in.Type))
		checkMapText(&probs, ifc, "options", in.Options)
		checkMapText(&probs, ifc, "other_config", in.OtherConfig)
		checkMapText(&probs, ifc, "external_ids", in.ExternalIDs)
	}
	return invalid(probs.Err())
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
	if r.Delete || len(r.Spec.Port.Interfaces) == 0 {
		return 2 // the port and its one interface
	}
	return 1 + len(r.Spec.Port.Interfaces)
}
