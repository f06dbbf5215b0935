package replica

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Interface columns, as bit numbers of a column mask.
const (
	ifName = iota
	ifType
	ifOptions
	ifOtherConfig
	ifExternalIDs
	ifOfport
	ifMTU
	ifMTURequest
	ifOfportRequest
	ifError
	ifLinkState
	ifAdminState
	ifMACInUse
	ifPolicingRate
	ifPolicingBurst
	ifPolicingKpktsRate
	ifPolicingKpktsBurst
	ifStatistics
	ifColumns
)

func ifaceColumn(c int) string {
	switch c {
	case ifName:
		return "name"
	case ifType:
		return "type"
	case ifOptions:
		return "options"
	case ifOtherConfig:
		return "other_config"
	case ifExternalIDs:
		return "external_ids"
	case ifOfport:
		return "ofport"
	case ifMTU:
		return "mtu"
	case ifMTURequest:
		return "mtu_request"
	case ifOfportRequest:
		return "ofport_request"
	case ifError:
		return "error"
	case ifLinkState:
		return "link_state"
	case ifAdminState:
		return "admin_state"
	case ifMACInUse:
		return "mac_in_use"
	case ifPolicingRate:
		return "ingress_policing_rate"
	case ifPolicingBurst:
		return "ingress_policing_burst"
	case ifPolicingKpktsRate:
		return "ingress_policing_kpkts_rate"
	case ifPolicingKpktsBurst:
		return "ingress_policing_kpkts_burst"
	case ifStatistics:
		return "statistics"
	}
	return ""
}

// ifaceColumnID maps a column name to its id; ok is false for a column the store does not
// keep (statistics only when withStats).
func ifaceColumnID(name []byte, withStats bool) (int, bool) {
	for c := 0; c < ifColumns; c++ {
		if string(name) == ifaceColumn(c) {
			return c, c != ifStatistics || withStats
		}
	}
	return 0, false
}

// The enum values of link_state and admin_state; code 0 is "absent".
func upDownCode(b []byte) (uint8, bool) {
	switch string(b) {
	case "up":
		return 1, true
	case "down":
		return 2, true
	}
	return 0, false
}

func upDownName(c uint8) string {
	if c == 1 {
		return "up"
	}
	return "down"
}

// ifaceRow is one Interface row in compact form (112 bytes). Immutable once stored.
type ifaceRow struct {
	id    UUID
	name  string
	typ   string   // interned
	maps  []string // options, other_config, external_ids: sorted pairs per column, one after another
	ends  [2]uint32
	ints  [4]int32 // ofport, mtu, mtu_request, ofport_request, valid per flags
	mac   [6]byte  // mac_in_use when flagMAC
	flags uint16
	extra *ifaceExtra // nil for a plain interface
}

const (
	flagInt      = 1 << 0 // +i: ints[i] present
	flagWide     = 1 << 4 // +i: int i present, in extra.wide[i] (outside int32)
	flagMAC      = 1 << 8 // mac_in_use present, in mac
	flagMACText  = 1 << 9 // mac_in_use present, in extra.macText (not canonical)
	flagErr      = 1 << 10
	shiftLink    = 11 // 2 bits: link_state code
	shiftAdmin   = 13 // 2 bits: admin_state code
	maskEnumCode = 3
)

// ifaceExtra holds the columns a plain interface leaves at their defaults.
type ifaceExtra struct {
	wide     [4]int64
	err      string
	macText  string
	policing [4]int64 // rate, burst, kpkts_rate, kpkts_burst
	stats    []statPair
}

func (e *ifaceExtra) isZero() bool {
	return e.wide == [4]int64{} && e.err == "" && e.macText == "" && e.policing == [4]int64{} && len(e.stats) == 0
}

// statPair is one pair of a string→integer map (Interface.statistics).
type statPair struct {
	k string
	v int64
}

// ifaceVals is an Interface row with every column in plain form: what a row is decoded into
// before it is packed, and what a diff is applied to.
type ifaceVals struct {
	name, typ   string
	maps        [3][]string
	ints        [4]int64
	hasInt      [4]bool
	err         string
	hasErr      bool
	link, admin uint8
	mac         string
	hasMAC      bool
	policing    [4]int64
	stats       []statPair
}

func (r *ifaceRow) section(i int) []string {
	lo, hi := 0, len(r.maps)
	if i > 0 {
		lo = int(r.ends[i-1])
	}
	if i < 2 {
		hi = int(r.ends[i])
	}
	return r.maps[lo:hi:hi]
}

// pack builds the compact row of v.
func (v *ifaceVals) pack(id UUID) *ifaceRow {
	r := &ifaceRow{id: id, name: v.name, typ: v.typ}
	var ex ifaceExtra
	if n := len(v.maps[0]) + len(v.maps[1]) + len(v.maps[2]); n > 0 {
		r.maps = make([]string, 0, n)
		r.maps = append(append(append(r.maps, v.maps[0]...), v.maps[1]...), v.maps[2]...)
		r.ends = [2]uint32{uint32(len(v.maps[0])), uint32(len(v.maps[0]) + len(v.maps[1]))}
	}
	for i, n := range v.ints {
		switch {
		case !v.hasInt[i]:
		case n >= math.MinInt32 && n <= math.MaxInt32:
			r.ints[i] = int32(n)
			r.flags |= flagInt << i
		default:
			ex.wide[i] = n
			r.flags |= flagWide << i
		}
	}
	if v.hasErr {
		r.flags |= flagErr
		ex.err = v.err
	}
	r.flags |= uint16(v.link)<<shiftLink | uint16(v.admin)<<shiftAdmin
	if v.hasMAC {
		if m, ok := parseMAC(v.mac); ok {
			r.mac = m
			r.flags |= flagMAC
		} else {
			ex.macText = v.mac
			r.flags |= flagMACText
		}
	}
	ex.policing = v.policing
	ex.stats = v.stats
	if !ex.isZero() {
		r.extra = &ex
	}
	return r
}

// vals unpacks r. The maps alias r's (immutable) slices.
func (r *ifaceRow) vals() ifaceVals {
	v := ifaceVals{name: r.name, typ: r.typ}
	for i := range v.maps {
		if s := r.section(i); len(s) > 0 {
			v.maps[i] = s
		}
	}
	ex := r.extra
	if ex == nil {
		ex = &ifaceExtra{}
	}
	for i := range v.ints {
		switch {
		case r.flags&(flagInt<<i) != 0:
			v.ints[i], v.hasInt[i] = int64(r.ints[i]), true
		case r.flags&(flagWide<<i) != 0:
			v.ints[i], v.hasInt[i] = ex.wide[i], true
		}
	}
	if r.flags&flagErr != 0 {
		v.err, v.hasErr = ex.err, true
	}
	v.link = uint8(r.flags>>shiftLink) & maskEnumCode
	v.admin = uint8(r.flags>>shiftAdmin) & maskEnumCode
	switch {
	case r.flags&flagMAC != 0:
		v.mac, v.hasMAC = formatMAC(r.mac), true
	case r.flags&flagMACText != 0:
		v.mac, v.hasMAC = ex.macText, true
	}
	v.policing = ex.policing
	v.stats = ex.stats
	return v
}

// apply returns old with the update2 difference d applied to the columns in mask.
func (v ifaceVals) apply(d *ifaceVals, mask uint32) (ifaceVals, error) {
	old, n := v, v
	has := func(c int) bool { return mask&(1<<c) != 0 }
	if has(ifName) && d.name != old.name {
		return n, fmt.Errorf("column name is immutable (%q → %q): %w", old.name, d.name, ErrInconsistent)
	}
	if has(ifType) {
		n.typ = d.typ
	}
	for i, c := range [3]int{ifOptions, ifOtherConfig, ifExternalIDs} {
		if has(c) {
			n.maps[i] = applyMapDiff(old.maps[i], d.maps[i])
		}
	}
	for i, c := range [4]int{ifOfport, ifMTU, ifMTURequest, ifOfportRequest} {
		if has(c) {
			n.ints[i], n.hasInt[i] = d.ints[i], d.hasInt[i]
		}
	}
	if has(ifError) {
		n.err, n.hasErr = d.err, d.hasErr
	}
	if has(ifLinkState) {
		n.link = d.link
	}
	if has(ifAdminState) {
		n.admin = d.admin
	}
	if has(ifMACInUse) {
		n.mac, n.hasMAC = d.mac, d.hasMAC
	}
	for i, c := range [4]int{ifPolicingRate, ifPolicingBurst, ifPolicingKpktsRate, ifPolicingKpktsBurst} {
		if has(c) {
			n.policing[i] = d.policing[i]
		}
	}
	if has(ifStatistics) {
		n.stats = applyStatDiff(old.stats, d.stats)
	}
	return n, nil
}

// model materialises v as a fresh vswitch.Interface.
func (v *ifaceVals) model(id UUID) *vswitch.Interface {
	m := &vswitch.Interface{
		UUID:                      id.String(),
		Name:                      v.name,
		Type:                      v.typ,
		Options:                   pairsMap(v.maps[0]),
		OtherConfig:               pairsMap(v.maps[1]),
		ExternalIDs:               pairsMap(v.maps[2]),
		IngressPolicingRate:       int(v.policing[0]),
		IngressPolicingBurst:      int(v.policing[1]),
		IngressPolicingKpktsRate:  int(v.policing[2]),
		IngressPolicingKpktsBurst: int(v.policing[3]),
	}
	dst := [4]**int{&m.Ofport, &m.MTU, &m.MTURequest, &m.OfportRequest}
	for i, p := range dst {
		if v.hasInt[i] {
			n := int(v.ints[i])
			*p = &n
		}
	}
	if v.hasErr {
		s := v.err
		m.Error = &s
	}
	if v.link != 0 {
		s := upDownName(v.link)
		m.LinkState = &s
	}
	if v.admin != 0 {
		s := upDownName(v.admin)
		m.AdminState = &s
	}
	if v.hasMAC {
		s := v.mac
		m.MACInUse = &s
	}
	if len(v.stats) > 0 {
		m.Statistics = make(map[string]int, len(v.stats))
		for _, p := range v.stats {
			m.Statistics[p.k] = int(p.v)
		}
	}
	return m
}

// parseMAC parses a MAC address in the canonical form ovs-vswitchd writes (xx:xx:xx:xx:xx:xx,
// lower-case), the only one kept in binary.
func parseMAC(s string) ([6]byte, bool) {
	var m [6]byte
	if len(s) != 17 {
		return m, false
	}
	for i := range m {
		if i > 0 && s[3*i-1] != ':' {
			return m, false
		}
		hi, ok1 := unhex(s[3*i])
		lo, ok2 := unhex(s[3*i+1])
		if !ok1 || !ok2 {
			return m, false
		}
		m[i] = hi<<4 | lo
	}
	return m, true
}

func formatMAC(m [6]byte) string {
	var b [17]byte
	for i, c := range m {
		if i > 0 {
			b[3*i-1] = ':'
		}
		b[3*i], b[3*i+1] = hexDigits[c>>4], hexDigits[c&15]
	}
	return string(b[:])
}

// normStats sorts statistics pairs by key, the last of equal keys winning.
func normStats(p []statPair) []statPair {
	slices.SortStableFunc(p, func(a, b statPair) int { return cmp.Compare(a.k, b.k) })
	out := p[:0]
	for _, e := range p {
		if n := len(out); n > 0 && out[n-1].k == e.k {
			out[n-1] = e
			continue
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// applyStatDiff is applyMapDiff for a string→integer map.
func applyStatDiff(old, d []statPair) []statPair {
	if len(d) == 0 {
		return old
	}
	out := make([]statPair, 0, len(old)+len(d))
	i, j := 0, 0
	for i < len(old) || j < len(d) {
		switch {
		case j == len(d) || (i < len(old) && old[i].k < d[j].k):
			out = append(out, old[i])
			i++
		case i == len(old) || d[j].k < old[i].k:
			out = append(out, d[j])
			j++
		default:
			if old[i].v != d[j].v {
				out = append(out, d[j])
			}
			i++
			j++
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
