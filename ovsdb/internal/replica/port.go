package replica

import (
	"cmp"
	"fmt"
	"math"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Port columns, as bit numbers of a column mask.
const (
	ptName = iota
	ptInterfaces
	ptTag
	ptTrunks
	ptVLANMode
	ptBondMode
	ptLACP
	ptOtherConfig
	ptExternalIDs
	ptQoS
	ptBondUpdelay
	ptBondDowndelay
	ptColumns
)

func portColumn(c int) string {
	switch c {
	case ptName:
		return "name"
	case ptInterfaces:
		return "interfaces"
	case ptTag:
		return "tag"
	case ptTrunks:
		return "trunks"
	case ptVLANMode:
		return "vlan_mode"
	case ptBondMode:
		return "bond_mode"
	case ptLACP:
		return "lacp"
	case ptOtherConfig:
		return "other_config"
	case ptExternalIDs:
		return "external_ids"
	case ptQoS:
		return "qos"
	case ptBondUpdelay:
		return "bond_updelay"
	case ptBondDowndelay:
		return "bond_downdelay"
	}
	return ""
}

func portColumnID(name []byte) (int, bool) {
	for c := 0; c < ptColumns; c++ {
		if string(name) == portColumn(c) {
			return c, true
		}
	}
	return 0, false
}

// enumValue returns the value of code c (1-based) of a Port enum column; enumCode the
// reverse (ok false for a value outside the schema's enum).
func portEnumValue(col, c int) string {
	switch col {
	case ptVLANMode:
		return [...]string{"", vswitch.PortVLANModeTrunk, vswitch.PortVLANModeAccess, vswitch.PortVLANModeNativeTagged,
			vswitch.PortVLANModeNativeUntagged, vswitch.PortVLANModeDot1qTunnel}[c]
	case ptBondMode:
		return [...]string{"", vswitch.PortBondModeBalanceTCP, vswitch.PortBondModeBalanceSLB, vswitch.PortBondModeActiveBackup}[c]
	case ptLACP:
		return [...]string{"", vswitch.PortLACPActive, vswitch.PortLACPPassive, vswitch.PortLACPOff}[c]
	}
	return ""
}

func portEnumCode(col int, b []byte) (uint8, bool) {
	for c := 1; ; c++ {
		v := portEnumValue(col, c)
		if string(b) == v {
			return uint8(c), true
		}
		if (col == ptVLANMode && c == 5) || (col != ptVLANMode && c == 3) {
			return 0, false
		}
	}
}

// portRow is one Port row in compact form (104 bytes, the 112-byte size class). Immutable once
// stored.
type portRow struct {
	id              UUID
	name            string
	ifaces          []UUID   // sorted
	maps            []string // other_config, external_ids: sorted pairs per column
	ocEnd           uint32
	tag             int32 // valid when flagTag
	vlan, bond, lac uint8 // enum codes, 0 = absent
	flags           uint8
	extra           *portExtra
}

const (
	flagTag     = 1 << 0
	flagTagWide = 1 << 1 // tag in extra.tag
	flagQoS     = 1 << 2 // qos in extra.qos
)

type portExtra struct {
	tag        int64
	qos        UUID
	trunks     []int64 // sorted
	upd, downd int64
}

func (e *portExtra) isZero() bool {
	return e.tag == 0 && e.qos == UUID{} && len(e.trunks) == 0 && e.upd == 0 && e.downd == 0
}

// portVals is a Port row with every column in plain form.
type portVals struct {
	name            string
	ifaces          []UUID
	maps            [2][]string
	tag             int64
	hasTag          bool
	vlan, bond, lac uint8
	qos             UUID
	hasQoS          bool
	trunks          []int64
	upd, downd      int64
}

func (v *portVals) pack(id UUID) *portRow {
	r := &portRow{id: id, name: v.name, ifaces: v.ifaces, vlan: v.vlan, bond: v.bond, lac: v.lac}
	var ex portExtra
	if n := len(v.maps[0]) + len(v.maps[1]); n > 0 {
		r.maps = make([]string, 0, n)
		r.maps = append(append(r.maps, v.maps[0]...), v.maps[1]...)
		r.ocEnd = uint32(len(v.maps[0]))
	}
	switch {
	case !v.hasTag:
	case v.tag >= math.MinInt32 && v.tag <= math.MaxInt32:
		r.tag, r.flags = int32(v.tag), r.flags|flagTag
	default:
		ex.tag, r.flags = v.tag, r.flags|flagTagWide
	}
	if v.hasQoS {
		ex.qos, r.flags = v.qos, r.flags|flagQoS
	}
	ex.trunks, ex.upd, ex.downd = v.trunks, v.upd, v.downd
	if !ex.isZero() || r.flags&flagQoS != 0 {
		r.extra = &ex
	}
	return r
}

func (r *portRow) vals() portVals {
	v := portVals{name: r.name, ifaces: r.ifaces, vlan: r.vlan, bond: r.bond, lac: r.lac}
	if lo := r.maps[:r.ocEnd:r.ocEnd]; len(lo) > 0 {
		v.maps[0] = lo
	}
	if hi := r.maps[r.ocEnd:]; len(hi) > 0 {
		v.maps[1] = hi
	}
	ex := r.extra
	if ex == nil {
		ex = &portExtra{}
	}
	switch {
	case r.flags&flagTag != 0:
		v.tag, v.hasTag = int64(r.tag), true
	case r.flags&flagTagWide != 0:
		v.tag, v.hasTag = ex.tag, true
	}
	if r.flags&flagQoS != 0 {
		v.qos, v.hasQoS = ex.qos, true
	}
	v.trunks, v.upd, v.downd = ex.trunks, ex.upd, ex.downd
	return v
}

// apply returns v with the update2 difference d applied to the columns in mask.
func (v portVals) apply(d *portVals, mask uint32) (portVals, error) {
	old, n := v, v
	has := func(c int) bool { return mask&(1<<c) != 0 }
	if has(ptName) && d.name != old.name {
		return n, fmt.Errorf("column name is immutable (%q → %q): %w", old.name, d.name, ErrInconsistent)
	}
	if has(ptInterfaces) {
		n.ifaces = symDiff(old.ifaces, d.ifaces, compareUUID)
	}
	if has(ptTag) {
		n.tag, n.hasTag = d.tag, d.hasTag
	}
	if has(ptTrunks) {
		n.trunks = symDiff(old.trunks, d.trunks, cmp.Compare[int64])
	}
	if has(ptVLANMode) {
		n.vlan = d.vlan
	}
	if has(ptBondMode) {
		n.bond = d.bond
	}
	if has(ptLACP) {
		n.lac = d.lac
	}
	for i, c := range [2]int{ptOtherConfig, ptExternalIDs} {
		if has(c) {
			n.maps[i] = applyMapDiff(old.maps[i], d.maps[i])
		}
	}
	if has(ptQoS) {
		n.qos, n.hasQoS = d.qos, d.hasQoS
	}
	if has(ptBondUpdelay) {
		n.upd = d.upd
	}
	if has(ptBondDowndelay) {
		n.downd = d.downd
	}
	return n, nil
}

func (v *portVals) model(id UUID) *vswitch.Port {
	m := &vswitch.Port{
		UUID:          id.String(),
		Name:          v.name,
		Interfaces:    uuidStrings(v.ifaces),
		OtherConfig:   pairsMap(v.maps[0]),
		ExternalIDs:   pairsMap(v.maps[1]),
		BondUpdelay:   int(v.upd),
		BondDowndelay: int(v.downd),
	}
	if v.hasTag {
		t := int(v.tag)
		m.Tag = &t
	}
	if len(v.trunks) > 0 {
		m.Trunks = make([]int, len(v.trunks))
		for i, t := range v.trunks {
			m.Trunks[i] = int(t)
		}
	}
	dst := [3]struct {
		p    **string
		col  int
		code uint8
	}{{&m.VLANMode, ptVLANMode, v.vlan}, {&m.BondMode, ptBondMode, v.bond}, {&m.LACP, ptLACP, v.lac}}
	for _, e := range dst {
		if e.code != 0 {
			s := portEnumValue(e.col, int(e.code))
			*e.p = &s
		}
	}
	if v.hasQoS {
		s := v.qos.String()
		m.QOS = &s
	}
	return m
}
