package replica

import (
	"encoding/json/jsontext"
	"fmt"
	"sync"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Options configures a Store.
type Options struct {
	// Statistics keeps Interface.statistics (monitored only when the daemon reports them).
	Statistics bool
	// Limits bounds the input; zero fields take their defaults.
	Limits Limits
	// InternLimit bounds the interner's entries; 0 means 4,096.
	InternLimit int
}

// Store is the replica of the monitored tables. Its methods are safe for concurrent use;
// ReadTableUpdates calls are serialised.
type Store struct {
	opts   Options
	lim    Limits
	db     model.DatabaseModel
	tables map[string]*tableInfo

	readMu sync.Mutex // serialises ReadTableUpdates; guards in
	in     *interner

	mu  sync.RWMutex
	cur *state
}

// state is one generation of the replica. Its maps are changed only under Store.mu's write
// lock; the rows they hold are never changed.
type state struct {
	ifaces   map[UUID]*ifaceRow
	ifName   map[string]*ifaceRow
	ports    map[UUID]*portRow
	portName map[string]*portRow
	bridges  map[UUID]*bridgeRow
	brName   map[string]*bridgeRow
	small    map[string]map[UUID]model.Model // the nine small tables
}

// bridgeRow is a Bridge: ports in compact form, the other columns as a vswitch.Bridge whose
// Ports is nil. Immutable once stored.
type bridgeRow struct {
	id    UUID
	ports []UUID   // sorted
	ext   []string // external_ids as sorted pairs, for Tags
	m     *vswitch.Bridge
}

func (s *Store) newState() *state {
	st := &state{
		ifaces: make(map[UUID]*ifaceRow), ifName: make(map[string]*ifaceRow),
		ports: make(map[UUID]*portRow), portName: make(map[string]*portRow),
		bridges: make(map[UUID]*bridgeRow), brName: make(map[string]*bridgeRow),
		small: make(map[string]map[UUID]model.Model),
	}
	for name, ti := range s.tables {
		if ti.kind == kindSmall {
			st.small[name] = make(map[UUID]model.Model)
		}
	}
	return st
}

// NewStore returns an empty store.
func NewStore(opts Options) (*Store, error) {
	db, err := newDatabaseModel()
	if err != nil {
		return nil, err
	}
	tables, err := newTables(db)
	if err != nil {
		return nil, err
	}
	if opts.InternLimit <= 0 {
		opts.InternLimit = 4096
	}
	s := &Store{opts: opts, lim: opts.Limits.withDefaults(), db: db, tables: tables, in: newInterner(opts.InternLimit)}
	s.cur = s.newState()
	return s, nil
}

type opKind uint8

const (
	opInsert opKind = iota + 1
	opModify
	opDelete
)

type ifaceOp struct {
	id   UUID
	kind opKind
	row  *ifaceRow  // insert
	d    *ifaceVals // modify
	mask uint32
}

type portOp struct {
	id   UUID
	kind opKind
	row  *portRow
	d    *portVals
	mask uint32
}

type bridgeOp struct {
	id       UUID
	kind     opKind
	row      *bridgeRow // insert
	ports    []UUID     // modify: difference of ports
	hasPorts bool
	diff     ovsdb.Row // modify: the other columns
}

type smallOp struct {
	table string
	id    UUID
	kind  opKind
	m     model.Model // insert
	diff  ovsdb.Row   // modify
}

// Pending is one table-updates object read but not yet visible. Exactly one of Commit and
// Discard should be called; a Pending is not safe for concurrent use.
type Pending struct {
	s       *Store
	initial bool
	gen     *state // initial: the whole new state
	ifOps   []ifaceOp
	portOps []portOp
	brOps   []bridgeOp
	smOps   []smallOp
	done    bool
	// What a committed diff changed, for EachChange.
	changed *changes
}

// changes are the rows a committed diff replaced, inserted or deleted.
type changes struct {
	ifc []ifaceChange
	ptc []portChange
	brc []bridgeChange
	smc []smallChange
}

// ReadTableUpdates reads one <table-updates2> JSON object (RFC 7047 as extended by
// ovsdb-server(7): {"Table": {"<uuid>": {"initial"|"insert"|"modify": <row>} | {"delete":
// null}}}) from dec, which is positioned just before the object's '{', and returns what it
// read, not yet visible to readers.
//
// initial=true: it is a monitor_cond reply, i.e. the whole new state (a new generation that
// replaces everything at Commit); false: an update2 diff applied on top of the current state
// at Commit.
//
// It consumes exactly that one value, even when it returns an error, unless the decoder
// itself failed (a syntax or I/O error), which leaves dec failed. Errors match ErrTooLarge
// (a *LimitError), ErrMalformed or ErrInconsistent ("modify" or "delete" in an initial
// reply), or wrap the decoder's error. Tables and columns the store does not keep are skipped.
func (s *Store) ReadTableUpdates(dec *jsontext.Decoder, initial bool) (*Pending, error) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	r := &reader{d: dec, lim: s.lim, base: dec.StackDepth()}
	p := &Pending{s: s, initial: initial}
	if initial {
		p.gen = s.newState()
	}
	if err := s.readUpdates(r, p); err != nil {
		r.resync()
		return nil, err
	}
	return p, nil
}

func (s *Store) readUpdates(r *reader, p *Pending) error {
	if k := r.d.PeekKind(); k != '{' {
		if k == 0 {
			_, err := r.d.ReadToken()
			r.started = true // the decoder failed: nothing to skip
			return r.decodeErr(err)
		}
		return r.malformed("table-updates object expected, found %v", k)
	}
	if err := r.expect('{'); err != nil {
		return err
	}
	r.started = true
	var seen uint64
	for r.d.PeekKind() != '}' {
		name, err := r.str()
		if err != nil {
			return err
		}
		ti := s.tables[string(name)]
		if ti == nil {
			if err := r.skip(); err != nil {
				return err
			}
			continue
		}
		if seen&(1<<ti.idx) != 0 {
			return r.malformed("table %s twice", ti.name)
		}
		seen |= 1 << ti.idx
		r.table = ti.name
		if err := s.readTable(r, ti, p); err != nil {
			return err
		}
		r.table = ""
	}
	return r.expect('}')
}

func (s *Store) readTable(r *reader, ti *tableInfo, p *Pending) error {
	if err := r.expect('{'); err != nil {
		return err
	}
	var seen map[UUID]struct{} // diff: rows already read (initial: the new state's maps)
	if !p.initial {
		seen = make(map[UUID]struct{})
	}
	for n := 0; r.d.PeekKind() != '}'; n++ {
		if n == s.lim.Rows {
			return r.limit("rows", s.lim.Rows)
		}
		idText, err := r.str()
		if err != nil {
			return err
		}
		id, ok := parseUUID(idText)
		if !ok {
			return r.malformed("bad row uuid %q", idText)
		}
		r.row, r.hasRow = id, true
		if p.initial {
			if p.gen.has(ti, id) {
				return r.malformed("row twice")
			}
		} else {
			if _, dup := seen[id]; dup {
				return r.malformed("row twice")
			}
			seen[id] = struct{}{}
		}
		if err := r.expect('{'); err != nil {
			return err
		}
		opText, err := r.str()
		if err != nil {
			return err
		}
		var kind opKind
		switch string(opText) {
		case "initial", "insert":
			kind = opInsert
		case "modify":
			kind = opModify
		case "delete":
			kind = opDelete
		default:
			return r.malformed("unknown row operation %q", opText)
		}
		if p.initial && kind != opInsert {
			return fmt.Errorf("replica: %s%q in a monitor reply: %w", r.where(), opText, ErrInconsistent)
		}
		if kind == opDelete {
			if r.d.PeekKind() != 'n' {
				return r.malformed("\"delete\" must be null")
			}
			if _, err := r.d.ReadToken(); err != nil {
				return r.decodeErr(err)
			}
		} else if err := s.readRow(r, ti, p, id, kind); err != nil {
			return err
		}
		if k := r.d.PeekKind(); k != '}' {
			return r.malformed("more than one operation on a row")
		}
		if err := r.expect('}'); err != nil {
			return err
		}
		if kind == opDelete {
			p.addDelete(ti, id)
		}
		r.hasRow = false
	}
	return r.expect('}')
}

func (st *state) has(ti *tableInfo, id UUID) bool {
	var ok bool
	switch ti.kind {
	case kindInterface:
		_, ok = st.ifaces[id]
	case kindPort:
		_, ok = st.ports[id]
	case kindBridge:
		_, ok = st.bridges[id]
	default:
		_, ok = st.small[ti.name][id]
	}
	return ok
}

func (p *Pending) addDelete(ti *tableInfo, id UUID) {
	switch ti.kind {
	case kindInterface:
		p.ifOps = append(p.ifOps, ifaceOp{id: id, kind: opDelete})
	case kindPort:
		p.portOps = append(p.portOps, portOp{id: id, kind: opDelete})
	case kindBridge:
		p.brOps = append(p.brOps, bridgeOp{id: id, kind: opDelete})
	default:
		p.smOps = append(p.smOps, smallOp{table: ti.name, id: id, kind: opDelete})
	}
}

// readRow reads the row of an insert or modify and records it in p.
func (s *Store) readRow(r *reader, ti *tableInfo, p *Pending, id UUID, kind opKind) error {
	switch ti.kind {
	case kindInterface:
		v, mask, err := s.readIface(r)
		if err != nil {
			return err
		}
		if kind == opModify {
			p.ifOps = append(p.ifOps, ifaceOp{id: id, kind: kind, d: &v, mask: mask})
			return nil
		}
		row := v.pack(id)
		if p.initial {
			p.gen.ifaces[id] = row
			p.gen.ifName[row.name] = row
			return nil
		}
		p.ifOps = append(p.ifOps, ifaceOp{id: id, kind: kind, row: row})
	case kindPort:
		v, mask, err := s.readPort(r)
		if err != nil {
			return err
		}
		if kind == opModify {
			p.portOps = append(p.portOps, portOp{id: id, kind: kind, d: &v, mask: mask})
			return nil
		}
		row := v.pack(id)
		if p.initial {
			p.gen.ports[id] = row
			p.gen.portName[row.name] = row
			return nil
		}
		p.portOps = append(p.portOps, portOp{id: id, kind: kind, row: row})
	case kindBridge:
		var ports []UUID
		hasPorts := false
		row, err := s.readSmallRow(r, ti, func(col []byte) (bool, error) {
			if string(col) != "ports" {
				return false, nil
			}
			if hasPorts {
				return true, r.malformed("column ports twice")
			}
			hasPorts = true
			r.column = "ports"
			err := r.set(akUUID, s.lim.BridgePorts, func(a atom) error {
				ports = append(ports, a.u)
				return nil
			})
			r.column = ""
			return true, err
		})
		if err != nil {
			return err
		}
		ports = exact(normSet(ports, compareUUID))
		if kind == opModify {
			p.brOps = append(p.brOps, bridgeOp{id: id, kind: kind, ports: ports, hasPorts: hasPorts, diff: row})
			return nil
		}
		m, err := s.createModel(r, ti, row, id)
		if err != nil {
			return err
		}
		b := m.(*vswitch.Bridge)
		br := &bridgeRow{id: id, ports: ports, ext: mapPairs(b.ExternalIDs), m: b}
		if p.initial {
			p.gen.bridges[id] = br
			p.gen.brName[b.Name] = br
			return nil
		}
		p.brOps = append(p.brOps, bridgeOp{id: id, kind: kind, row: br})
	default:
		row, err := s.readSmallRow(r, ti, nil)
		if err != nil {
			return err
		}
		if kind == opModify {
			p.smOps = append(p.smOps, smallOp{table: ti.name, id: id, kind: kind, diff: row})
			return nil
		}
		m, err := s.createModel(r, ti, row, id)
		if err != nil {
			return err
		}
		if p.initial {
			p.gen.small[ti.name][id] = m
			return nil
		}
		p.smOps = append(p.smOps, smallOp{table: ti.name, id: id, kind: kind, m: m})
	}
	return nil
}

func (s *Store) createModel(r *reader, ti *tableInfo, row ovsdb.Row, id UUID) (model.Model, error) {
	m, err := model.CreateModel(s.db, ti.name, &row, id.String())
	if err != nil {
		return nil, r.malformed("%v", err)
	}
	normModel(m)
	return m, nil
}

// exact returns s in an allocation of its own length (append's growth would otherwise stay
// allocated for the row's life).
func exact[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	if cap(s) == len(s) {
		return s
	}
	out := make([]T, len(s))
	copy(out, s)
	return out
}

// Discard drops p. Calling it after Commit does nothing.
func (p *Pending) Discard() {
	if p == nil {
		return
	}
	p.done = true
	p.gen, p.ifOps, p.portOps, p.brOps, p.smOps = nil, nil, nil, nil, nil
}

// Commit makes p visible atomically, under the store's write lock: an initial read replaces
// the whole state, a diff is applied to the current state. The error, when not nil, matches
// ErrInconsistent (a modify or delete of a uuid the store does not hold, an insert of one it
// does, a change to an immutable column) or ErrTooLarge (a table or column grown past its
// bound); then nothing was applied. A Pending commits at most once.
func (p *Pending) Commit() error {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.done {
		return fmt.Errorf("replica: pending update committed or discarded already: %w", ErrInconsistent)
	}
	p.done = true
	if p.initial {
		s.cur = p.gen
		return nil
	}
	return s.apply(p)
}

// Sizes for a result check.
func (s *Store) checkElems(table string, id UUID, column string, n, limit int) error {
	if n > limit {
		return &LimitError{What: "elements after update", Table: table, Column: column, Row: id.String(), Limit: limit}
	}
	return nil
}

// checkHeld refuses an operation the replica's state contradicts: an insert of a row it holds,
// a modify or delete of one it does not.
func checkHeld(table string, id UUID, kind opKind, held bool) error {
	switch {
	case kind == opInsert && held:
		return inconsistent(table, id, "insert of a row the replica holds")
	case kind == opDelete && !held:
		return inconsistent(table, id, "delete of a row the replica does not hold")
	case kind == opModify && !held:
		return inconsistent(table, id, "modify of a row the replica does not hold")
	}
	return nil
}

func inconsistent(table string, id UUID, what string) error {
	return fmt.Errorf("replica: %s row %s: %s: %w", table, id, what, ErrInconsistent)
}

type ifaceChange struct{ old, new *ifaceRow }
type portChange struct{ old, new *portRow }
type bridgeChange struct{ old, new *bridgeRow }
type smallChange struct {
	table    string
	id       UUID
	old, new model.Model // old nil: insert; new nil: delete
}

// apply applies a diff in two passes after checking all of it: rows by uuid first, then the
// name indexes, where an entry is removed only if it still points at the row removed, so
// the order of a message's members cannot matter.
func (s *Store) apply(p *Pending) error {
	cur := s.cur
	ifc, err := s.ifaceChanges(cur, p.ifOps)
	if err != nil {
		return err
	}
	ptc, err := s.portChanges(cur, p.portOps)
	if err != nil {
		return err
	}
	brc, err := s.bridgeChanges(cur, p.brOps)
	if err != nil {
		return err
	}
	smc, err := s.smallChanges(cur, p.smOps)
	if err != nil {
		return err
	}
	p.changed = &changes{ifc: ifc, ptc: ptc, brc: brc, smc: smc}
	// Pass 1: rows by uuid.
	for _, c := range ifc {
		if c.new == nil {
			delete(cur.ifaces, c.old.id)
		} else {
			cur.ifaces[c.new.id] = c.new
		}
	}
	for _, c := range ptc {
		if c.new == nil {
			delete(cur.ports, c.old.id)
		} else {
			cur.ports[c.new.id] = c.new
		}
	}
	for _, c := range brc {
		if c.new == nil {
			delete(cur.bridges, c.old.id)
		} else {
			cur.bridges[c.new.id] = c.new
		}
	}
	for _, c := range smc {
		if c.new == nil {
			delete(cur.small[c.table], c.id)
		} else {
			cur.small[c.table][c.id] = c.new
		}
	}
	// Pass 2: name indexes.
	for _, c := range ifc {
		if c.old != nil && cur.ifName[c.old.name] == c.old {
			delete(cur.ifName, c.old.name)
		}
	}
	for _, c := range ifc {
		if c.new != nil {
			cur.ifName[c.new.name] = c.new
		}
	}
	for _, c := range ptc {
		if c.old != nil && cur.portName[c.old.name] == c.old {
			delete(cur.portName, c.old.name)
		}
	}
	for _, c := range ptc {
		if c.new != nil {
			cur.portName[c.new.name] = c.new
		}
	}
	for _, c := range brc {
		if c.old != nil && cur.brName[c.old.m.Name] == c.old {
			delete(cur.brName, c.old.m.Name)
		}
	}
	for _, c := range brc {
		if c.new != nil {
			cur.brName[c.new.m.Name] = c.new
		}
	}
	return nil
}

func (s *Store) rowCount(table string, have, ins, del int) error {
	if have+ins-del > s.lim.Rows {
		return &LimitError{What: "rows", Table: table, Limit: s.lim.Rows}
	}
	return nil
}

func (s *Store) ifaceChanges(cur *state, ops []ifaceOp) ([]ifaceChange, error) {
	const t = vswitch.InterfaceTable
	out := make([]ifaceChange, 0, len(ops))
	ins, del := 0, 0
	for _, op := range ops {
		old := cur.ifaces[op.id]
		if err := checkHeld(t, op.id, op.kind, old != nil); err != nil {
			return nil, err
		}
		switch op.kind {
		case opInsert:
			out = append(out, ifaceChange{new: op.row})
			ins++
		case opDelete:
			out = append(out, ifaceChange{old: old})
			del++
		case opModify:
			v, err := old.vals().apply(op.d, op.mask)
			if err != nil {
				return nil, fmt.Errorf("replica: %s row %s: %w", t, op.id, err)
			}
			for i, c := range [3]int{ifOptions, ifOtherConfig, ifExternalIDs} {
				if err := s.checkElems(t, op.id, ifaceColumn(c), len(v.maps[i])/2, s.lim.Elements); err != nil {
					return nil, err
				}
			}
			if err := s.checkElems(t, op.id, "statistics", len(v.stats), s.lim.Elements); err != nil {
				return nil, err
			}
			out = append(out, ifaceChange{old: old, new: v.pack(op.id)})
		}
	}
	return out, s.rowCount(t, len(cur.ifaces), ins, del)
}

func (s *Store) portChanges(cur *state, ops []portOp) ([]portChange, error) {
	const t = vswitch.PortTable
	out := make([]portChange, 0, len(ops))
	ins, del := 0, 0
	for _, op := range ops {
		old := cur.ports[op.id]
		if err := checkHeld(t, op.id, op.kind, old != nil); err != nil {
			return nil, err
		}
		switch op.kind {
		case opInsert:
			out = append(out, portChange{new: op.row})
			ins++
		case opDelete:
			out = append(out, portChange{old: old})
			del++
		case opModify:
			v, err := old.vals().apply(op.d, op.mask)
			if err != nil {
				return nil, fmt.Errorf("replica: %s row %s: %w", t, op.id, err)
			}
			for _, e := range [...]struct {
				col string
				n   int
			}{{"interfaces", len(v.ifaces)}, {"trunks", len(v.trunks)}, {"other_config", len(v.maps[0]) / 2}, {"external_ids", len(v.maps[1]) / 2}} {
				if err := s.checkElems(t, op.id, e.col, e.n, s.lim.Elements); err != nil {
					return nil, err
				}
			}
			out = append(out, portChange{old: old, new: v.pack(op.id)})
		}
	}
	return out, s.rowCount(t, len(cur.ports), ins, del)
}

func (s *Store) bridgeChanges(cur *state, ops []bridgeOp) ([]bridgeChange, error) {
	const t = vswitch.BridgeTable
	out := make([]bridgeChange, 0, len(ops))
	ins, del := 0, 0
	for _, op := range ops {
		old := cur.bridges[op.id]
		if err := checkHeld(t, op.id, op.kind, old != nil); err != nil {
			return nil, err
		}
		switch op.kind {
		case opInsert:
			out = append(out, bridgeChange{new: op.row})
			ins++
		case opDelete:
			out = append(out, bridgeChange{old: old})
			del++
		case opModify:
			n := &bridgeRow{id: op.id, ports: old.ports, ext: old.ext, m: old.m}
			if op.hasPorts {
				n.ports = symDiff(old.ports, op.ports, compareUUID)
				if err := s.checkElems(t, op.id, "ports", len(n.ports), s.lim.BridgePorts); err != nil {
					return nil, err
				}
			}
			if len(op.diff) > 0 {
				m, err := s.modifyModel(t, op.id, old.m, op.diff)
				if err != nil {
					return nil, err
				}
				n.m = m.(*vswitch.Bridge)
				n.ext = mapPairs(n.m.ExternalIDs)
			}
			out = append(out, bridgeChange{old: old, new: n})
		}
	}
	return out, s.rowCount(t, len(cur.bridges), ins, del)
}

// modifyModel applies an update2 modify to a small-table model with libovsdb's updates
// package (the same rules as its cache) and returns the new model, or cur when nothing
// changed.
func (s *Store) modifyModel(table string, id UUID, cur model.Model, diff ovsdb.Row) (model.Model, error) {
	var u updatesBuffer
	m, err := u.modify(s.db, table, id.String(), cur, diff)
	if err != nil {
		return nil, fmt.Errorf("replica: %s row %s: %v: %w", table, id, err, ErrInconsistent)
	}
	if m == nil {
		return cur, nil
	}
	normModel(m)
	return m, nil
}

func (s *Store) smallChanges(cur *state, ops []smallOp) ([]smallChange, error) {
	out := make([]smallChange, 0, len(ops))
	ins := make(map[string]int)
	del := make(map[string]int)
	for _, op := range ops {
		old := cur.small[op.table][op.id]
		if err := checkHeld(op.table, op.id, op.kind, old != nil); err != nil {
			return nil, err
		}
		switch op.kind {
		case opInsert:
			out = append(out, smallChange{table: op.table, id: op.id, new: op.m})
			ins[op.table]++
		case opDelete:
			out = append(out, smallChange{table: op.table, id: op.id, old: old})
			del[op.table]++
		case opModify:
			m, err := s.modifyModel(op.table, op.id, old, op.diff)
			if err != nil {
				return nil, err
			}
			out = append(out, smallChange{table: op.table, id: op.id, old: old, new: m})
		}
	}
	for t, n := range ins {
		if err := s.rowCount(t, len(cur.small[t]), n, del[t]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
