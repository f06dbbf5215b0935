package replica

import (
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// EachChange calls fn for every row the committed diff p inserted, modified or deleted, in
// no particular order, with fresh copies of the row before and after it (old is nil for an
// insert, new nil for a delete), built only when fn is called. It calls nothing for an
// initial read (a new generation replaces every row: the consumer must resynchronise), for a
// Pending not committed, or one whose Commit failed. It may be called after Commit returned,
// from any goroutine: the rows it materialises never change.
func (p *Pending) EachChange(fn func(table string, old, new model.Model)) {
	if p == nil || p.changed == nil {
		return
	}
	c := p.changed
	for _, x := range c.ifc {
		var o, n model.Model
		if x.old != nil {
			o = p.s.ifaceModel(x.old)
		}
		if x.new != nil {
			n = p.s.ifaceModel(x.new)
		}
		fn(vswitch.InterfaceTable, o, n)
	}
	for _, x := range c.ptc {
		var o, n model.Model
		if x.old != nil {
			v := x.old.vals()
			o = v.model(x.old.id)
		}
		if x.new != nil {
			v := x.new.vals()
			n = v.model(x.new.id)
		}
		fn(vswitch.PortTable, o, n)
	}
	for _, x := range c.brc {
		var o, n model.Model
		if x.old != nil {
			o = x.old.model()
		}
		if x.new != nil {
			n = x.new.model()
		}
		fn(vswitch.BridgeTable, o, n)
	}
	for _, x := range c.smc {
		var o, n model.Model
		if x.old != nil {
			o = model.Clone(x.old)
		}
		if x.new != nil {
			n = model.Clone(x.new)
		}
		fn(x.table, o, n)
	}
}
