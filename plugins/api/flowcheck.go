package api

import (
	"fmt"
	"strings"

	"github.com/ovsplane/ovsplane/model/limits"
)

// The one parser of the ovs-ofctl text a plugin puts in Flow.Match, Flow.Actions and
// Bucket.Actions. It is lexical: it splits the text into clauses and admits only the bytes and
// shapes of ovs-ofctl syntax that can never end the flow or group they are rendered into, nor
// start a second command (no control byte, no newline, no '#', no quote, no backslash, no
// ';'), and refuses the keywords that would change what the flow is rather than what it
// matches or does (cookie=, table=, priority=, actions=… in a match; weight=, bucket… in a
// bucket) and learn(), which writes flows at packet time outside the set the host keeps.
// What the fields and actions mean is left to Open vSwitch, which refuses unknown ones.

// OFClause is one top-level clause of a match or an action list in ovs-ofctl syntax, as the
// parsers accepted it: "in_port=1" is {Name: "in_port", Rest: "=1"}, "resubmit(,2)" is
// {Name: "resubmit", Rest: "(,2)"}, "ip" is {Name: "ip"}. Only the parsers make valid
// clauses; CheckOFClause tells whether a clause built by other means is one.
type OFClause struct {
	// Name is the field, keyword or action name: letters, digits and '_'.
	Name string
	// Rest is what follows Name: empty, or starting with '=', ':', '(' or '[', with balanced
	// parentheses and brackets and no top-level comma.
	Rest string
}

// String renders the clause as ovs-ofctl reads it.
func (c OFClause) String() string { return c.Name + c.Rest }

// JoinOFClauses renders clauses as one ovs-ofctl list ("in_port=1,ip").
func JoinOFClauses(cs []OFClause) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, ",")
}

// matchAttrs are the keywords ovs-ofctl reads as attributes of the flow itself, not as match
// fields; a plugin sets them through Flow's fields or not at all.
var matchAttrs = map[string]string{
	"cookie": "use Flow.Cookie", "table": "use Flow.Table", "priority": "use Flow.Priority",
	"idle_timeout": "use Flow.IdleTimeout", "hard_timeout": "use Flow.HardTimeout",
	"importance": "not settable", "out_port": "not settable", "out_group": "not settable",
	"send_flow_rem": "not settable", "check_overlap": "not settable", "reset_counts": "not settable",
	"no_packet_counts": "not settable", "no_byte_counts": "not settable", "no_readonly_table": "not settable",
	"allow_hidden_fields": "not settable", "duration": "not settable", "n_packets": "not settable",
	"n_bytes": "not settable", "idle_age": "not settable", "hard_age": "not settable",
}

// bucketAttrs are the keywords ovs-ofctl reads as attributes of a bucket or a group.
var bucketAttrs = map[string]bool{
	"weight": true, "watch_port": true, "watch_group": true, "bucket_id": true, "group_id": true,
	"type": true, "selection_method": true, "selection_method_param": true, "fields": true,
	"command_bucket_id": true,
}

// ofTextKind is what a piece of ovs-ofctl text is; it decides which keywords it may hold.
type ofTextKind int

const (
	ofMatch ofTextKind = iota
	ofActions
	ofBucketActions
)

// ParseOFMatch parses a flow's match ("in_port=1,ip"; empty matches everything). It refuses
// anything but ovs-ofctl syntax on one line, and the flow attributes (cookie=, priority=…).
func ParseOFMatch(s string) ([]OFClause, error) { return parseOF(s, ofMatch) }

// ParseOFActions parses a flow's action list ("group:7", "drop"); it must not be empty. It
// refuses anything but ovs-ofctl syntax on one line, and learn().
func ParseOFActions(s string) ([]OFClause, error) { return parseOF(s, ofActions) }

// ParseOFBucketActions parses a group bucket's action list ("output:3"); it must not be empty.
// It refuses what ParseOFActions refuses and the bucket and group attributes (weight=,
// bucket…).
func ParseOFBucketActions(s string) ([]OFClause, error) { return parseOF(s, ofBucketActions) }

// CheckOFClause reports whether c is a clause the parsers could have produced for some text
// (kind aside): the renderer's last guard against a clause built by hand.
func CheckOFClause(c OFClause) error {
	cs, err := lexOF(c.String(), ofActions)
	if err != nil {
		return err
	}
	if len(cs) != 1 || cs[0] != c {
		return fmt.Errorf("%q is not one clause", c.String())
	}
	return nil
}

// ofByte reports whether b may appear in ovs-ofctl text a plugin supplies: letters, digits
// and the punctuation of fields, masks, addresses and actions. Everything else — control
// bytes, newlines, NUL, space, quotes, '#', '\\', ';', non-ASCII — is refused.
func ofByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("_.:/,=()[]->+", b) >= 0
}

func parseOF(s string, kind ofTextKind) ([]OFClause, error) {
	if s == "" {
		if kind == ofMatch {
			return nil, nil
		}
		return nil, fmt.Errorf(`is empty (use "drop" to drop)`)
	}
	cs, err := lexOF(s, kind)
	if err != nil {
		return nil, err
	}
	lower := strings.ToLower(s)
	if kind == ofMatch && strings.Contains(lower, "action") {
		return nil, fmt.Errorf(`contains "action": put actions in Actions, not in the match`)
	}
	if kind == ofBucketActions && strings.Contains(lower, "bucket") {
		return nil, fmt.Errorf(`contains "bucket": give each bucket as its own Bucket`)
	}
	if kind != ofMatch && hasLearn(lower) {
		return nil, fmt.Errorf("learn() is not allowed: it writes flows at packet time, outside the set the host keeps")
	}
	for _, c := range cs {
		name := strings.ToLower(c.Name)
		if fix, ok := matchAttrs[name]; ok && kind == ofMatch {
			return nil, fmt.Errorf("%q is a flow attribute, not a match field: %s", c.Name, fix)
		}
		if bucketAttrs[name] && kind == ofBucketActions {
			return nil, fmt.Errorf("%q is a bucket or group attribute, not an action: use the Bucket and Group fields", c.Name)
		}
	}
	return cs, nil
}

// lexOF checks the bytes of s and splits it into clauses; kind only words the errors.
func lexOF(s string, kind ofTextKind) ([]OFClause, error) {
	for i := 0; i < len(s); i++ {
		if !ofByte(s[i]) {
			return nil, fmt.Errorf("byte %q at offset %d is not ovs-ofctl syntax: give one flow's %s on one line, without spaces, quotes, ';' or control bytes", s[i], i, kindName(kind))
		}
	}
	raw, err := splitTop(s)
	if err != nil {
		return nil, err
	}
	out := make([]OFClause, 0, len(raw))
	for _, r := range raw {
		c, err := clause(r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func kindName(k ofTextKind) string {
	if k == ofMatch {
		return "match"
	}
	return "actions"
}

// hasLearn reports whether the lower-case text calls learn( at any depth.
func hasLearn(lower string) bool {
	for i := 0; ; {
		j := strings.Index(lower[i:], "learn(")
		if j < 0 {
			return false
		}
		j += i
		if j == 0 || !identByte(lower[j-1]) {
			return true
		}
		i = j + 1
	}
}

func identByte(b byte) bool {
	return b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

// splitTop splits s at the commas outside parentheses and brackets, which must balance.
func splitTop(s string) ([]string, error) {
	var out []string
	var stack []byte
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			stack = append(stack, s[i])
		case ')', ']':
			open := byte('(')
			if s[i] == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return nil, fmt.Errorf("unbalanced %q at offset %d", s[i], i)
			}
			stack = stack[:len(stack)-1]
		case ',':
			if len(stack) == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("unclosed %q", stack[len(stack)-1])
	}
	return append(out, s[start:]), nil
}

// clause splits one top-level clause into its name and the rest.
func clause(r string) (OFClause, error) {
	n := 0
	for n < len(r) && identByte(r[n]) {
		n++
	}
	switch {
	case r == "":
		return OFClause{}, fmt.Errorf("empty clause (two commas in a row, or a comma at an end)")
	case n == 0:
		return OFClause{}, fmt.Errorf("clause %q does not start with a name", r)
	case n < len(r) && strings.IndexByte("=:([", r[n]) < 0:
		return OFClause{}, fmt.Errorf("clause %q: %q after the name %q, want '=', ':', '(' or '['", r, r[n], r[:n])
	}
	return OFClause{Name: r[:n], Rest: r[n:]}, nil
}

// checkFlowSet is ValidateFlowSet's work: see there.
func checkFlowSet(cookies CookieRange, groups GroupRange, fs FlowSet) error {
	var ps problems
	if len(fs.Flows) > limits.MaxFlowsPerPlugin {
		ps.add("flows", "%d flows, more than limits.MaxFlowsPerPlugin (%d): merge flows or spread them over groups", len(fs.Flows), limits.MaxFlowsPerPlugin)
	}
	type key struct {
		table    uint8
		priority uint16
		match    string
	}
	seen := map[key]int{}
	for i, fl := range fs.Flows {
		f := fmt.Sprintf("flows[%d]", i)
		if fl.Cookie != 0 && !cookies.Contains(fl.Cookie) {
			ps.add(f+".cookie", "%#x outside the plugin's cookies (value %#x, mask %#x): use 0 for the value, or a cookie c with c&mask == value", fl.Cookie, cookies.Value, cookies.Mask)
		}
		if fl.Table == 255 {
			ps.add(f+".table", "255 is not a flow table (0-254)")
		}
		if n := len(fl.Match) + len(fl.Actions); n > limits.MaxFlowBytes {
			ps.add(f, "match and actions are %d bytes, more than limits.MaxFlowBytes (%d)", n, limits.MaxFlowBytes)
			continue
		}
		m, err := ParseOFMatch(fl.Match)
		if err != nil {
			ps.add(f+".match", "%v", err)
		}
		if _, err := ParseOFActions(fl.Actions); err != nil {
			ps.add(f+".actions", "%v", err)
		}
		if err == nil {
			k := key{fl.Table, fl.Priority, JoinOFClauses(m)}
			if j, dup := seen[k]; dup {
				ps.add(f, "same table, priority and match as flows[%d]: one of them would replace the other; merge them or change the priority", j)
			} else {
				seen[k] = i
			}
		}
	}
	checkGroups(&ps, groups, fs.Groups)
	return ps.err("flow set")
}

func checkGroups(ps *problems, groups GroupRange, gs []Group) {
	if len(gs) > limits.MaxGroupsPerPlugin {
		ps.add("groups", "%d groups, more than limits.MaxGroupsPerPlugin (%d)", len(gs), limits.MaxGroupsPerPlugin)
	}
	seen := map[uint32]bool{}
	for i, g := range gs {
		f := fmt.Sprintf("groups[%d]", i)
		switch {
		case !groups.Contains(g.ID):
			ps.add(f+".id", "%d outside the plugin's group ids %d-%d", g.ID, groups.First, uint64(groups.First)+uint64(groups.Count)-1)
		case seen[g.ID]:
			ps.add(f+".id", "%d is listed twice", g.ID)
		}
		seen[g.ID] = true
		if !ovsGroupTypes[g.Type] {
			ps.add(f+".type", "%q is not all, select, indirect or fast_failover", g.Type)
		}
		switch g.SelectionMethod {
		case "", "hash", "dp_hash":
			if g.SelectionMethod != "" && g.Type != "select" {
				ps.add(f+".selection_method", "only select groups have one (type is %q)", g.Type)
			}
		default:
			ps.add(f+".selection_method", "%q is not hash or dp_hash (or empty for the default)", g.SelectionMethod)
		}
		if len(g.Buckets) > limits.MaxBucketsPerGroup {
			ps.add(f+".buckets", "%d buckets, more than limits.MaxBucketsPerGroup (%d)", len(g.Buckets), limits.MaxBucketsPerGroup)
			continue
		}
		for j, b := range g.Buckets {
			bf := fmt.Sprintf("%s.buckets[%d]", f, j)
			if len(b.Actions) > limits.MaxFlowBytes {
				ps.add(bf+".actions", "%d bytes, more than limits.MaxFlowBytes (%d)", len(b.Actions), limits.MaxFlowBytes)
			} else if _, err := ParseOFBucketActions(b.Actions); err != nil {
				ps.add(bf+".actions", "%v", err)
			}
		}
	}
}
