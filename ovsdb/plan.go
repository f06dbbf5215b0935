package ovsdb

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	libmodel "github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// planner turns a Txn's intents into OVSDB operations against one snapshot of the cache. It is
// rebuilt from scratch on every commit attempt.
type planner struct {
	ctx   context.Context
	c     *Client
	owner string
	gen   int64
	seq   int

	ops  []libovsdb.Operation
	refs []objRef

	root        *vswitch.OpenvSwitch
	bridges     map[string]*bridgeState // by name, as seen or changed in this txn
	portBridge  map[string]string       // port UUID → bridge name (built on first need)
	newPorts    map[string]bool
	goneUUIDs   map[string]bool // rows deleted in this txn
	guarded     map[string]bool // rows that already carry a wait operation
	newIfaces   map[string]bool
	ifaces      []string // interfaces whose status the commit reports
	claims      []claim
	globalSet   map[string]string
	globalUnset map[string]bool
	rootAdd     []string
	rootDel     []string
	// newPortNames: named UUID → name of the ports created in this txn; mirrorPlans: the
	// existing bridges whose mirrors finish plans (mirror.go).
	newPortNames map[string]string
	mirrorPlans  []mirrorPlan
}

type bridgeState struct {
	uuid    string        // real UUID, or named UUID when created in this txn
	created *model.Bridge // the intent of a bridge created in this txn
	owned   bool
	deleted bool
	add     []string
	del     []string
}

func newPlanner(ctx context.Context, c *Client, gen int64) *planner {
	return &planner{ctx: ctx, c: c, owner: c.owner, gen: gen, bridges: map[string]*bridgeState{},
		newPorts: map[string]bool{}, goneUUIDs: map[string]bool{}, guarded: map[string]bool{},
		newIfaces: map[string]bool{}, globalSet: map[string]string{}, globalUnset: map[string]bool{},
		newPortNames: map[string]string{}}
}

func (p *planner) add(ref objRef, ops ...libovsdb.Operation) {
	for range ops {
		p.refs = append(p.refs, ref)
	}
	p.ops = append(p.ops, ops...)
}

func (p *planner) namedUUID(prefix string) string {
	p.seq++
	return fmt.Sprintf("%s%d", prefix, p.seq)
}

// lookup fills m (a pointer to a Bridge, Port or Interface model with its name set) from the
// cache; false when absent or deleted earlier in this transaction.
func (p *planner) lookup(table string, m libmodel.Model) (bool, error) {
	r, ok := p.c.read()
	if !ok {
		return false, ErrNotConnected
	}
	uuid, row := r.byName(table, nameOf(m))
	if row == nil || p.goneUUIDs[uuid] {
		return false, nil
	}
	if err := assign(m, row); err != nil {
		return false, fmt.Errorf("ovsdb: cache lookup in %s: %w", table, err)
	}
	return true, nil
}

// rowByUUID fills m (a pointer to the model of table) with row uuid from the cache; false when
// it is not there.
func (p *planner) rowByUUID(table, uuid string, m libmodel.Model) bool {
	r, ok := p.c.read()
	if !ok {
		return false
	}
	row := r.byUUID(table, uuid)
	return row != nil && assign(m, row) == nil
}

// nameOf returns the name of a Bridge, Port or Interface model ("" for any other).
func nameOf(m libmodel.Model) string {
	switch v := m.(type) {
	case *vswitch.Bridge:
		return v.Name
	case *vswitch.Port:
		return v.Name
	case *vswitch.Interface:
		return v.Name
	}
	return ""
}

// assign makes *dst equal to *src, a row the caller owns (rowReader's copies): a shallow copy,
// since src shares nothing with the cache. Both must be pointers to the same model type.
func assign(dst, src libmodel.Model) error {
	d, s := reflect.ValueOf(dst), reflect.ValueOf(src)
	if d.Kind() != reflect.Pointer || d.IsNil() || d.Type() != s.Type() || s.IsNil() {
		return fmt.Errorf("%w: cannot fill a %T from a %T", ErrInvalid, dst, src)
	}
	d.Elem().Set(s.Elem())
	return nil
}

// bridge returns the state of the named bridge, or nil when it does not exist.
func (p *planner) bridge(name string) (*bridgeState, error) {
	if b, ok := p.bridges[name]; ok {
		if b.deleted {
			return nil, nil
		}
		return b, nil
	}
	br := &vswitch.Bridge{Name: name}
	found, err := p.lookup(vswitch.BridgeTable, br)
	if err != nil || !found {
		return nil, err
	}
	b := &bridgeState{uuid: br.UUID, owned: ownedBy(br.ExternalIDs, p.owner)}
	p.bridges[name] = b
	return b, nil
}

// guard adds, once per row, a wait operation asserting the row still exists with the given
// column values (and still carries our owner tag when owned is true).
func (p *planner) guard(ref objRef, uuid string, owned bool, row libovsdb.Row) {
	key := ref.table + "/" + uuid
	if p.guarded[key] {
		return
	}
	p.guarded[key] = true
	where := whereUUID(uuid)
	if owned {
		where = ownedWhere(uuid, p.owner)
	}
	p.add(ref, waitOp(ref.table, where, row))
}

// existsRow is the projection used to assert that a row exists at all.
func existsRow(uuid string) libovsdb.Row {
	return libovsdb.Row{"_uuid": libovsdb.UUID{GoUUID: uuid}}
}

func notOwned(table, name, owner string, ext map[string]string) error {
	holder := ext[OwnerKey]
	if holder == "" {
		holder = "nobody (no " + OwnerKey + " key)"
	}
	return &OpError{Kind: ErrNotOwned, Table: table, Row: name,
		Details: fmt.Sprintf("it is owned by %s, not %q; ovsplane never changes rows it did not create — remove or rename it by hand, or pick another name", holder, owner)}
}

// bridgeOf returns the name of the bridge holding portUUID ("" if none).
func (p *planner) bridgeOf(portUUID string) string {
	if p.portBridge == nil {
		p.portBridge = map[string]string{}
		if r, ok := p.c.read(); ok {
			r.each(vswitch.BridgeTable, func(_ string, row libmodel.Model) bool {
				if br, ok := row.(*vswitch.Bridge); ok {
					for _, pu := range br.Ports {
						p.portBridge[pu] = br.Name
					}
				}
				return true
			})
		}
	}
	return p.portBridge[portUUID]
}

// finish appends the per-bridge and root mutations collected while planning, so that a batch
// of N ports on one bridge costs one mutate of Bridge.ports, not N.
func (p *planner) finish() error {
	if err := p.checkClaims(); err != nil {
		return err
	}
	if err := p.finishGlobal(); err != nil {
		return err
	}
	names := make([]string, 0, len(p.bridges))
	for n := range p.bridges {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		b := p.bridges[name]
		switch {
		case b.deleted:
			continue
		case b.created != nil:
			if err := p.insertBridge(name, b); err != nil {
				return err
			}
		default:
			if len(b.add)+len(b.del) > 0 {
				ref := objRef{vswitch.BridgeTable, name}
				p.guard(ref, b.uuid, b.owned, existsRow(b.uuid))
				p.add(ref, mutateOp(vswitch.BridgeTable, whereUUID(b.uuid), pairMutations("ports", b.del, b.add)))
			}
		}
	}
	for _, mp := range p.mirrorPlans {
		p.planMirrors(mp)
	}
	if len(p.rootAdd)+len(p.rootDel) > 0 {
		root, err := p.rootRow()
		if err != nil {
			return err
		}
		ref := objRef{table: vswitch.OpenvSwitchTable}
		p.guard(ref, root.UUID, false, existsRow(root.UUID))
		p.add(ref, mutateOp(vswitch.OpenvSwitchTable, whereUUID(root.UUID),
			pairMutations("bridges", p.rootDel, p.rootAdd)))
	}
	return nil
}

// pairMutations inserts the add row references and deletes the del ones in one set column.
func pairMutations(col string, del, add []string) []libovsdb.Mutation {
	return deleteInsert(col, del, add, uuidSet)
}

func (p *planner) rootRow() (*vswitch.OpenvSwitch, error) {
	if p.root == nil {
		r, err := p.c.root(p.ctx)
		if err != nil {
			return nil, err
		}
		p.root = r
	}
	return p.root, nil
}
