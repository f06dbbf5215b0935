package openflow

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// The typed model of what the Programmer writes, and its renderers: the only code that
// produces ovs-ofctl flow and group text. A flowMod or groupMod is built from a plugin's
// api.Flow or api.Group only through newFlowMod and newGroupMod, which parse the plugin's
// text with the plugins/api parsers; the renderers check every clause again
// (api.CheckOFClause) and every byte of the line they produce, so a line can never hold a
// newline or any other byte that would end it and start a second command in a bundle file.

// flowMod is one flow to add: numbers, and the match and actions as parsed clauses.
type flowMod struct {
	cookie               uint64
	table                uint8
	priority, idle, hard uint16
	match, actions       []api.OFClause
	index                int // the flow's index in the plugin's FlowSet, for errors
}

// newFlowMod parses flow number i of a plugin's set; a zero cookie becomes cookies.Value.
func newFlowMod(i int, f api.Flow, cookies api.CookieRange) (flowMod, error) {
	m := flowMod{cookie: f.Cookie, table: f.Table, priority: f.Priority, idle: f.IdleTimeout, hard: f.HardTimeout, index: i}
	if m.cookie == 0 {
		m.cookie = cookies.Value
	}
	if !cookies.Contains(m.cookie) {
		return flowMod{}, fmt.Errorf("flows[%d].cookie: %#x outside %#x/%#x", i, m.cookie, cookies.Value, cookies.Mask)
	}
	var err error
	if m.match, err = api.ParseOFMatch(f.Match); err != nil {
		return flowMod{}, fmt.Errorf("flows[%d].match: %w", i, err)
	}
	if m.actions, err = api.ParseOFActions(f.Actions); err != nil {
		return flowMod{}, fmt.Errorf("flows[%d].actions: %w", i, err)
	}
	return m, nil
}

// renderFlow renders m as one line of ovs-ofctl flow syntax, without a command word:
// cookie=0x…,table=N,priority=N[,idle_timeout=N][,hard_timeout=N][,match…],actions=… .
func renderFlow(m flowMod) (string, error) {
	var b strings.Builder
	b.WriteString("cookie=0x")
	b.WriteString(strconv.FormatUint(m.cookie, 16))
	b.WriteString(",table=")
	b.WriteString(strconv.FormatUint(uint64(m.table), 10))
	b.WriteString(",priority=")
	b.WriteString(strconv.FormatUint(uint64(m.priority), 10))
	if m.idle > 0 {
		b.WriteString(",idle_timeout=")
		b.WriteString(strconv.FormatUint(uint64(m.idle), 10))
	}
	if m.hard > 0 {
		b.WriteString(",hard_timeout=")
		b.WriteString(strconv.FormatUint(uint64(m.hard), 10))
	}
	if err := writeClauses(&b, ",", m.match); err != nil {
		return "", fmt.Errorf("flows[%d].match: %w", m.index, err)
	}
	if len(m.actions) == 0 {
		return "", fmt.Errorf("flows[%d].actions: none", m.index)
	}
	if err := writeClauses(&b, ",actions=", m.actions); err != nil {
		return "", fmt.Errorf("flows[%d].actions: %w", m.index, err)
	}
	return checkLine(b.String())
}

// groupMod is one group to write.
type groupMod struct {
	id      uint32
	typ     string // one of groupTypes
	method  string // "", "hash" or "dp_hash"
	buckets []bucketMod
}

// bucketMod is one bucket of a groupMod.
type bucketMod struct {
	weight    uint16
	watchPort uint32
	actions   []api.OFClause
}

// groupTypes and selectionMethods are the only words renderGroup writes for them.
var (
	groupTypes       = map[string]bool{"all": true, "select": true, "indirect": true, "fast_failover": true}
	selectionMethods = map[string]bool{"": true, "hash": true, "dp_hash": true}
)

// newGroupMod parses group number i of a plugin's set.
func newGroupMod(i int, g api.Group, groups api.GroupRange) (groupMod, error) {
	if !groups.Contains(g.ID) {
		return groupMod{}, fmt.Errorf("groups[%d].id: %d outside %d..%d", i, g.ID, groups.First, uint64(groups.First)+uint64(groups.Count)-1)
	}
	if !groupTypes[g.Type] {
		return groupMod{}, fmt.Errorf("groups[%d].type: %q is not all, select, indirect or fast_failover", i, g.Type)
	}
	if !selectionMethods[g.SelectionMethod] {
		return groupMod{}, fmt.Errorf("groups[%d].selection_method: %q is not hash or dp_hash", i, g.SelectionMethod)
	}
	m := groupMod{id: g.ID, typ: g.Type, method: g.SelectionMethod}
	for j, bk := range g.Buckets {
		acts, err := api.ParseOFBucketActions(bk.Actions)
		if err != nil {
			return groupMod{}, fmt.Errorf("groups[%d].buckets[%d].actions: %w", i, j, err)
		}
		m.buckets = append(m.buckets, bucketMod{weight: bk.Weight, watchPort: bk.WatchPort, actions: acts})
	}
	return m, nil
}

// renderGroup renders g as one line of ovs-ofctl group syntax:
// group_id=N,type=T[,selection_method=M],bucket=[weight:N,][watch_port:N,]actions=…,bucket=… .
//
// Weights: in a select group where any bucket has a weight, every bucket's weight is written,
// 0 included, so a bucket set to 0 takes no new traffic (left out, Open vSwitch would give it
// its default weight, 1). A select group whose buckets all have weight 0 writes none: equal
// weights, Open vSwitch's default. Other group types write only the weights above 0.
func renderGroup(g groupMod) (string, error) {
	explicit := g.typ == "select" && slices.ContainsFunc(g.buckets, func(b bucketMod) bool { return b.weight > 0 })
	if !groupTypes[g.typ] || !selectionMethods[g.method] {
		return "", fmt.Errorf("group %d: type %q or selection method %q unknown", g.id, g.typ, g.method)
	}
	var b strings.Builder
	b.WriteString("group_id=")
	b.WriteString(strconv.FormatUint(uint64(g.id), 10))
	b.WriteString(",type=")
	b.WriteString(g.typ)
	if g.method != "" {
		b.WriteString(",selection_method=")
		b.WriteString(g.method)
	}
	for j, bk := range g.buckets {
		b.WriteString(",bucket=")
		if bk.weight > 0 || explicit {
			b.WriteString("weight:")
			b.WriteString(strconv.FormatUint(uint64(bk.weight), 10))
			b.WriteString(",")
		}
		if bk.watchPort > 0 {
			b.WriteString("watch_port:")
			b.WriteString(strconv.FormatUint(uint64(bk.watchPort), 10))
			b.WriteString(",")
		}
		if len(bk.actions) == 0 {
			return "", fmt.Errorf("group %d: buckets[%d].actions: none", g.id, j)
		}
		if err := writeClauses(&b, "actions=", bk.actions); err != nil {
			return "", fmt.Errorf("group %d: buckets[%d].actions: %w", g.id, j, err)
		}
	}
	return checkLine(b.String())
}

// writeClauses writes prefix and the clauses joined by commas, checking each; no clauses
// write nothing.
func writeClauses(b *strings.Builder, prefix string, cs []api.OFClause) error {
	for i, c := range cs {
		if err := api.CheckOFClause(c); err != nil {
			return err
		}
		if i == 0 {
			b.WriteString(prefix)
		} else {
			b.WriteString(",")
		}
		b.WriteString(c.String())
	}
	return nil
}

// checkLine is the renderers' last guard: a rendered line holds only printable ASCII other
// than space, '#', '\\', ';' and quotes, so it is exactly one line and one command.
func checkLine(s string) (string, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("#\\;\"'", c) >= 0 {
			return "", fmt.Errorf("rendered text %q holds byte %q at offset %d", s, c, i)
		}
	}
	return s, nil
}
