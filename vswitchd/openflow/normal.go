package openflow

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Reading ovs-ofctl's output: the flows of a dump and the flow_mods of parse-flows, reduced
// to what decides whether adding one flow replaces another (its table and its match with its
// priority, as Open vSwitch prints them), and dumps reduced to a comparable state.

// flowKey identifies a flow in a table: adding a flow with the same key replaces it,
// whatever its cookie.
type flowKey struct {
	table uint8
	match string // match_format's text, "priority=N," included unless it is the default
}

// dumpedFlow is one line of dump-flows --no-stats.
type dumpedFlow struct {
	cookie uint64
	key    flowKey
	line   string
}

// attrPrefixes start the words of a dump-flows or parse-flows line that are flow
// attributes, not the match.
var attrPrefixes = []string{"cookie=", "cookie:", "duration=", "table=", "table:", "n_packets=", "n_bytes=",
	"idle_timeout=", "hard_timeout=", "idle:", "hard:", "importance=", "importance:", "idle_age=", "hard_age=",
	"pri:", "buf:", "out_port:", "out_group:"}

// flagWords are the flow_mod flags ovs-ofctl prints as bare words.
var flagWords = map[string]bool{"send_flow_rem": true, "check_overlap": true, "reset_counts": true,
	"no_packet_counts": true, "no_byte_counts": true}

// parseAttrs reads the part of a flow line before "actions=": its cookie, table and match.
func parseAttrs(head string) (cookie uint64, key flowKey, ok bool) {
	words := strings.Fields(strings.ReplaceAll(head, ", ", " "))
	matched := false
	for _, w := range words {
		w = strings.TrimSuffix(w, ",")
		switch {
		case flagWords[w]:
		case strings.HasPrefix(w, "cookie=") || strings.HasPrefix(w, "cookie:"):
			c, err := strconv.ParseUint(w[len("cookie="):], 0, 64)
			if err != nil {
				return 0, flowKey{}, false
			}
			cookie = c
		case strings.HasPrefix(w, "table=") || strings.HasPrefix(w, "table:"):
			t, err := strconv.ParseUint(w[len("table="):], 10, 8)
			if err != nil {
				return 0, flowKey{}, false
			}
			key.table = uint8(t)
		case slices.ContainsFunc(attrPrefixes, func(p string) bool { return strings.HasPrefix(w, p) }):
		default:
			if matched {
				return 0, flowKey{}, false // two words that are not attributes: not a flow line
			}
			key.match, matched = w, true
		}
	}
	return cookie, key, true
}

// parseDump reads the flows of `ovs-ofctl --no-stats --no-names dump-flows`; lines it cannot
// read are an error (the caller then does not decide on a guess).
func parseDump(out string) ([]dumpedFlow, error) {
	var flows []dumpedFlow
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "OFPST_") || strings.HasPrefix(line, "NXST_") {
			continue
		}
		i := strings.Index(line, "actions=")
		if i < 0 {
			return nil, fmt.Errorf("dump-flows line %q has no actions", line)
		}
		cookie, key, ok := parseAttrs(line[:i])
		if !ok {
			return nil, fmt.Errorf("dump-flows line %q: cannot read its table and match", line)
		}
		flows = append(flows, dumpedFlow{cookie: cookie, key: key, line: line})
	}
	return flows, sc.Err()
}

var parseErrRe = regexp.MustCompile(`-:([0-9]+): (.*)`)

// parseFlowMods reads the output of `ovs-ofctl parse-flows -`: one key per "ADD" flow_mod,
// in input order.
func parseFlowMods(out string) ([]flowKey, error) {
	var keys []flowKey
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "): ADD")
		if !strings.HasPrefix(line, "OFPT_FLOW_MOD") || i < 0 {
			continue
		}
		head := line[i+len("): ADD"):]
		j := strings.Index(head, "actions=")
		if j < 0 {
			return nil, fmt.Errorf("parse-flows line %q has no actions", line)
		}
		_, key, ok := parseAttrs(head[:j])
		if !ok {
			return nil, fmt.Errorf("parse-flows line %q: cannot read its table and match", line)
		}
		keys = append(keys, key)
	}
	return keys, sc.Err()
}

// stateOf is the comparable state of a dump: its lines, trimmed and sorted, headers dropped,
// kept when keep says so (nil: all).
func stateOf(out string, keep func(line string) bool) string {
	var lines []string
	for l := range strings.Lines(out) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "OFPST_") || strings.HasPrefix(l, "NXST_") || keep != nil && !keep(l) {
			continue
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

var cookieRe = regexp.MustCompile(`cookie=(0x[0-9a-f]+)`)

// cookiesOf returns the cookie of every line of a dump-flows output that has one (cookie 0
// is not printed by --no-stats dumps).
func cookiesOf(dump string) []uint64 {
	var out []uint64
	for l := range strings.Lines(dump) {
		if m := cookieRe.FindStringSubmatch(l); m != nil {
			if c, err := strconv.ParseUint(m[1], 0, 64); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

var groupIDRe = regexp.MustCompile(`^group_id=([0-9]+)`)

// groupIDOf returns the group id of a dump-groups line.
func groupIDOf(line string) (uint32, bool) {
	m := groupIDRe.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return 0, false
	}
	id, err := strconv.ParseUint(m[1], 10, 32)
	return uint32(id), err == nil
}
