package replica

import (
	"cmp"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/ovn-kubernetes/libovsdb/updates"
)

// column runs fn with the reader's position set to column col.
func (r *reader) inColumn(col string, fn func() error) error {
	r.column = col
	err := fn() // errors carry the column in their text already
	r.column = ""
	return err
}

// optional reads a set of at most one atom (an optional column); fn is called for the
// element if there is one.
func (r *reader) optional(k atomKind, fn func(atom) error) error {
	n := 0
	return r.set(k, r.lim.Elements, func(a atom) error {
		if n++; n > 1 {
			return r.malformed("more than one value in an optional column")
		}
		return fn(a)
	})
}

// stringPairs reads a string→string map column as sorted pairs, keys interned, short values
// interned.
func (s *Store) stringPairs(r *reader) ([]string, error) {
	var p []string
	err := r.pairs(akString, akString, s.lim.Elements, func(k, v atom) error {
		p = append(p, s.in.get(k.s), s.in.value(v.s))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, nil
	}
	return normPairs(p), nil
}

// readIface reads an Interface row (of an insert, or the difference of a modify) and returns
// it with the mask of the columns it held.
func (s *Store) readIface(r *reader) (v ifaceVals, mask uint32, err error) {
	err = r.object(func(name []byte) error {
		c, ok := ifaceColumnID(name, s.opts.Statistics)
		if !ok {
			return r.skip()
		}
		return r.inColumn(ifaceColumn(c), func() error {
			if mask&(1<<c) != 0 {
				return r.malformed("column twice")
			}
			mask |= 1 << c
			switch c {
			case ifName:
				b, err := r.str()
				v.name = string(b)
				return err
			case ifType:
				b, err := r.str()
				v.typ = s.in.get(b)
				return err
			case ifOptions, ifOtherConfig, ifExternalIDs:
				var err error
				v.maps[c-ifOptions], err = s.stringPairs(r)
				return err
			case ifOfport, ifMTU, ifMTURequest, ifOfportRequest:
				i := c - ifOfport
				return r.optional(akInt, func(a atom) error {
					v.ints[i], v.hasInt[i] = a.n, true
					return nil
				})
			case ifError:
				return r.optional(akString, func(a atom) error {
					v.err, v.hasErr = string(a.s), true
					return nil
				})
			case ifLinkState, ifAdminState:
				return r.optional(akString, func(a atom) error {
					code, ok := upDownCode(a.s)
					if !ok {
						return r.malformed("%q is not in the column's enum", a.s)
					}
					if c == ifLinkState {
						v.link = code
					} else {
						v.admin = code
					}
					return nil
				})
			case ifMACInUse:
				return r.optional(akString, func(a atom) error {
					v.mac, v.hasMAC = string(a.s), true
					return nil
				})
			case ifPolicingRate, ifPolicingBurst, ifPolicingKpktsRate, ifPolicingKpktsBurst:
				n, err := r.integer()
				v.policing[c-ifPolicingRate] = n
				return err
			case ifStatistics:
				var p []statPair
				err := r.pairs(akString, akInt, s.lim.Elements, func(k, val atom) error {
					p = append(p, statPair{s.in.get(k.s), val.n})
					return nil
				})
				v.stats = exact(normStats(p))
				return err
			}
			return nil
		})
	})
	return v, mask, err
}

// readPort reads a Port row or difference.
func (s *Store) readPort(r *reader) (v portVals, mask uint32, err error) {
	err = r.object(func(name []byte) error {
		c, ok := portColumnID(name)
		if !ok {
			return r.skip()
		}
		return r.inColumn(portColumn(c), func() error {
			if mask&(1<<c) != 0 {
				return r.malformed("column twice")
			}
			mask |= 1 << c
			switch c {
			case ptName:
				b, err := r.str()
				v.name = string(b)
				return err
			case ptInterfaces:
				var ifaces []UUID
				err := r.set(akUUID, s.lim.Elements, func(a atom) error {
					ifaces = append(ifaces, a.u)
					return nil
				})
				v.ifaces = exact(normSet(ifaces, compareUUID))
				return err
			case ptTag:
				return r.optional(akInt, func(a atom) error {
					v.tag, v.hasTag = a.n, true
					return nil
				})
			case ptTrunks:
				var t []int64
				err := r.set(akInt, s.lim.Elements, func(a atom) error {
					t = append(t, a.n)
					return nil
				})
				v.trunks = exact(normSet(t, cmp.Compare[int64]))
				return err
			case ptVLANMode, ptBondMode, ptLACP:
				return r.optional(akString, func(a atom) error {
					code, ok := portEnumCode(c, a.s)
					if !ok {
						return r.malformed("%q is not in the column's enum", a.s)
					}
					switch c {
					case ptVLANMode:
						v.vlan = code
					case ptBondMode:
						v.bond = code
					default:
						v.lac = code
					}
					return nil
				})
			case ptOtherConfig, ptExternalIDs:
				var err error
				v.maps[c-ptOtherConfig], err = s.stringPairs(r)
				return err
			case ptQoS:
				return r.optional(akUUID, func(a atom) error {
					v.qos, v.hasQoS = a.u, true
					return nil
				})
			case ptBondUpdelay:
				n, err := r.integer()
				v.upd = n
				return err
			case ptBondDowndelay:
				n, err := r.integer()
				v.downd = n
				return err
			}
			return nil
		})
	})
	return v, mask, err
}

// readSmallRow reads a row of a small table (or Bridge) into libovsdb's notation, the
// monitored columns only. special, if not nil, is offered each column first and reports
// whether it read it.
func (s *Store) readSmallRow(r *reader, ti *tableInfo, special func(col []byte) (bool, error)) (ovsdb.Row, error) {
	row := ovsdb.Row{}
	err := r.object(func(name []byte) error {
		if special != nil {
			if done, err := special(name); done || err != nil {
				return err
			}
		}
		cs, ok := ti.cols[string(name)]
		if !ok {
			return r.skip()
		}
		col := string(name)
		return r.inColumn(col, func() error {
			if _, dup := row[col]; dup {
				return r.malformed("column twice")
			}
			v, err := r.ovsValue(cs)
			row[col] = v
			return err
		})
	})
	return row, err
}

func kindOf(t ovsdb.ExtendedType) atomKind {
	switch t {
	case ovsdb.TypeInteger:
		return akInt
	case ovsdb.TypeReal:
		return akReal
	case ovsdb.TypeBoolean:
		return akBool
	case ovsdb.TypeUUID:
		return akUUID
	}
	return akString
}

// native converts an atom to libovsdb's notation (what json.Unmarshal into ovsdb.Row makes
// of it, an integer already as int).
func native(k atomKind, a atom) any {
	switch k {
	case akInt:
		return int(a.n)
	case akReal:
		return a.f
	case akBool:
		return a.b
	case akUUID:
		return ovsdb.UUID{GoUUID: a.u.String()}
	}
	return string(a.s)
}

// ovsValue reads one column value in libovsdb's notation, typed by the column's schema.
func (r *reader) ovsValue(cs *ovsdb.ColumnSchema) (any, error) {
	switch cs.Type {
	case ovsdb.TypeMap:
		kk, vk := kindOf(cs.TypeObj.Key.Type), kindOf(cs.TypeObj.Value.Type)
		m := make(map[any]any)
		err := r.pairs(kk, vk, r.lim.Elements, func(k, v atom) error {
			m[native(kk, k)] = native(vk, v)
			return nil
		})
		return ovsdb.OvsMap{GoMap: m}, err
	case ovsdb.TypeSet:
		k := kindOf(cs.TypeObj.Key.Type)
		set := make([]any, 0, 1)
		err := r.set(k, r.lim.Elements, func(a atom) error {
			set = append(set, native(k, a))
			return nil
		})
		return ovsdb.OvsSet{GoSet: set}, err
	case ovsdb.TypeEnum:
		k := kindOf(cs.TypeObj.Key.Type)
		a, err := r.atom(k)
		return native(k, a), err
	default:
		k := kindOf(cs.Type)
		a, err := r.atom(k)
		return native(k, a), err
	}
}

// updatesBuffer applies one update2 modify with libovsdb's updates package.
type updatesBuffer struct{ u updates.ModelUpdates }

// modify returns the model after diff, or nil when diff changes nothing.
func (b *updatesBuffer) modify(db model.DatabaseModel, table, id string, cur model.Model, diff ovsdb.Row) (model.Model, error) {
	if err := b.u.AddRowUpdate2(db, table, id, cur, ovsdb.RowUpdate2{Modify: &diff}); err != nil {
		return nil, err
	}
	return b.u.GetModel(table, id), nil
}
