// Package accelconfig reads and writes the JSON configuration files of Intel's accel-config
// (`accel-config save-config` / `load-config`, and the profiles it ships in contrib/configs):
// an array of devices, each {"dev":"dsa0", device attributes…, "groups":[{"dev":"group0.0",
// group attributes…, "grouped_workqueues":[{"dev":"wq0.0", "mode", "size", "type", "name",
// …}], "grouped_engines":[{"dev":"engine0.0","group_id":0}]}]}. It turns such a file into a
// dsa.Request that adopts the setup it describes (ToRequest) and the host's configuration into
// such a file (FromInventory), so an existing accel-config setup is taken over rather than
// overwritten.
//
// accel-config reads its files with json-c, which accepts a comma before a closing bracket or
// brace, and its own shipped net_profile.conf has such commas; encoding/json rejects them. No
// JSON5/HuJSON library is in go.mod and adding one for this would be a dependency for one
// rule, so Parse removes those commas itself in a pre-pass that skips string contents
// (stripTrailingCommas) and then decodes strict JSON.
package accelconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Bounds of Parse.
const (
	// MaxBytes bounds a configuration file.
	MaxBytes = 1 << 20
	// MaxDevices bounds the devices of a file.
	MaxDevices = 64
	// MaxGroups, MaxWQs and MaxEngines bound the groups of a device and the work queues and
	// engines of a group.
	MaxGroups  = 256
	MaxWQs     = 256
	MaxEngines = 256
	// MaxExtra bounds the attributes of one object that this package does not interpret.
	MaxExtra = 64
)

// Config is an accel-config configuration: its devices in file order.
type Config struct {
	Devices []Device
}

// Device is one accelerator ("dsa0", or an IAA "iax1", which this package carries but
// ToRequest leaves out). The pointer fields are the read-only attributes `accel-config list`
// shows; nil when the file does not have them (save-config writes none of them, load-config
// ignores them).
type Device struct {
	Dev             string
	MaxGroups       *int
	MaxWorkQueues   *int
	MaxEngines      *int
	WorkQueueSize   *int
	NUMANode        *int
	State           string
	MaxBatchSize    *int
	MaxTransferSize *uint64
	Configurable    *int
	PASIDEnabled    *int
	Clients         *int
	Groups          []Group
	// Extra holds the other attributes (read_buffer_limit, op_cap, …) as compact JSON, kept
	// as they came.
	Extra map[string]json.RawMessage
}

// Group is one group of a device ("group0.0") with its work queues and engines.
type Group struct {
	Dev     string
	WQs     []WQ     // "grouped_workqueues"
	Engines []Engine // "grouped_engines"
	// Extra holds the group's attributes (read_buffers_*, traffic_class_*, …).
	Extra map[string]json.RawMessage
}

// WQ is one work queue ("wq0.0"). Nil pointers and empty strings are attributes the file
// does not have.
type WQ struct {
	Dev             string
	Mode            string // "dedicated" or "shared"
	Size            *int
	GroupID         *int
	Priority        *int
	BlockOnFault    *int
	MaxBatchSize    *int
	MaxTransferSize *uint64
	Type            string // "user", "kernel", "none"
	Name            string
	DriverName      string
	Threshold       *int
	ATSDisable      *int
	State           string // list output only
	Clients         *int   // list output only
	// Extra holds the other attributes (prs_disable, op_config, cdev_minor, …).
	Extra map[string]json.RawMessage
}

// Engine is one engine ("engine0.0") and its group.
type Engine struct {
	Dev     string
	GroupID *int
	Extra   map[string]json.RawMessage
}

// attr is one interpreted attribute: its key and where its value lives (**int, **uint64 or
// *string).
type attr struct {
	key string
	ptr any
}

// The interpreted attributes of each object, in the order accel-config writes them.
func (d *Device) attrs() []attr {
	return []attr{{"max_groups", &d.MaxGroups}, {"max_work_queues", &d.MaxWorkQueues},
		{"max_engines", &d.MaxEngines}, {"work_queue_size", &d.WorkQueueSize}, {"numa_node", &d.NUMANode},
		{"state", &d.State}, {"max_batch_size", &d.MaxBatchSize}, {"max_transfer_size", &d.MaxTransferSize},
		{"configurable", &d.Configurable}, {"pasid_enabled", &d.PASIDEnabled}, {"clients", &d.Clients}}
}

func (w *WQ) attrs() []attr {
	return []attr{{"mode", &w.Mode}, {"size", &w.Size}, {"group_id", &w.GroupID}, {"priority", &w.Priority},
		{"block_on_fault", &w.BlockOnFault}, {"max_batch_size", &w.MaxBatchSize},
		{"max_transfer_size", &w.MaxTransferSize}, {"type", &w.Type}, {"name", &w.Name},
		{"driver_name", &w.DriverName}, {"threshold", &w.Threshold}, {"ats_disable", &w.ATSDisable},
		{"state", &w.State}, {"clients", &w.Clients}}
}

func (e *Engine) attrs() []attr { return []attr{{"group_id", &e.GroupID}} }

// Object names accel-config uses; the numbers are the device's and the object's.
var (
	reDevice = regexp.MustCompile(`^(dsa|iax)([0-9]{1,3})$`)
	reChild  = regexp.MustCompile(`^(group|wq|engine)([0-9]{1,3})\.([0-9]{1,3})$`)
)

// Parse reads an accel-config configuration. It accepts what json-c accepts of the shipped
// files (a comma before a closing bracket or brace), refuses input over MaxBytes or with more
// devices, groups, work queues, engines or unknown attributes than the Max* bounds, and names
// the object at fault in every error ("dsa0/group0.1/wq0.1: size: …"): an object name that is
// not accel-config's (dsaN/iaxN, groupN.M, wqN.M, engineN.M with N the device's number), an
// attribute of the wrong type, a device or child listed twice. Attributes it does not interpret
// are kept in Extra; a key given twice in one object keeps its last value, as json-c does.
func Parse(data []byte) (Config, error) {
	if len(data) > MaxBytes {
		return Config{}, fmt.Errorf("accel-config: %d bytes (at most %d)", len(data), MaxBytes)
	}
	clean := stripTrailingCommas(data)
	var raws []json.RawMessage
	if err := json.Unmarshal(clean, &raws); err != nil {
		return Config{}, fmt.Errorf("accel-config: not a JSON array of devices: %w", syntaxWhere(clean, err))
	}
	if len(raws) > MaxDevices {
		return Config{}, fmt.Errorf("accel-config: %d devices (at most %d)", len(raws), MaxDevices)
	}
	var c Config
	seen := map[string]bool{}
	for i, raw := range raws {
		d, err := parseDevice(raw, i)
		if err != nil {
			return Config{}, fmt.Errorf("accel-config: %w", err)
		}
		if seen[d.Dev] {
			return Config{}, fmt.Errorf("accel-config: %s: listed twice (merge its entries)", d.Dev)
		}
		seen[d.Dev] = true
		c.Devices = append(c.Devices, d)
	}
	return c, nil
}

// syntaxWhere adds the line and column of a JSON syntax error.
func syntaxWhere(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	off := min(int(se.Offset), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("line %d column %d: %w", line, col, err)
}

// object decodes raw as a JSON object, bounded, and takes its "dev" name.
func object(raw json.RawMessage, where string) (map[string]json.RawMessage, string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, "", fmt.Errorf("%s: not a JSON object", where)
	}
	devRaw, ok := m["dev"]
	if !ok {
		return nil, "", fmt.Errorf(`%s: no "dev" name`, where)
	}
	var dev string
	if err := json.Unmarshal(devRaw, &dev); err != nil {
		return nil, "", fmt.Errorf(`%s: "dev" is not a string`, where)
	}
	delete(m, "dev")
	return m, dev, nil
}

func parseDevice(raw json.RawMessage, i int) (Device, error) {
	m, name, err := object(raw, fmt.Sprintf("device %d", i+1))
	if err != nil {
		return Device{}, err
	}
	sm := reDevice.FindStringSubmatch(name)
	if sm == nil {
		return Device{}, fmt.Errorf("device %d: %.40q is not an accelerator name (dsaN or iaxN)", i+1, name)
	}
	d := Device{Dev: name}
	var groupsRaw []json.RawMessage
	if g, ok := m["groups"]; ok {
		if err := json.Unmarshal(g, &groupsRaw); err != nil {
			return Device{}, fmt.Errorf(`%s: "groups" is not an array`, name)
		}
		delete(m, "groups")
	}
	if len(groupsRaw) > MaxGroups {
		return Device{}, fmt.Errorf("%s: %d groups (at most %d)", name, len(groupsRaw), MaxGroups)
	}
	if d.Extra, err = takeAttrs(m, d.attrs(), name); err != nil {
		return Device{}, err
	}
	seen := map[string]bool{}
	for j, gr := range groupsRaw {
		g, err := parseGroup(gr, name, sm[2], j, seen)
		if err != nil {
			return Device{}, err
		}
		d.Groups = append(d.Groups, g)
	}
	return d, nil
}

// child checks a child object's name: kind, the device's number, not seen before.
func child(name, kind, devNum, where string, seen map[string]bool) error {
	sm := reChild.FindStringSubmatch(name)
	if sm == nil || sm[1] != kind {
		return fmt.Errorf("%s: %.40q is not a %s name (%sN.M)", where, name, kind, kind)
	}
	if sm[2] != devNum {
		return fmt.Errorf("%s: %s belongs to device number %s, not %s", where, name, sm[2], devNum)
	}
	if seen[name] {
		return fmt.Errorf("%s: %s is listed twice", where, name)
	}
	seen[name] = true
	return nil
}

func parseGroup(raw json.RawMessage, dev, devNum string, j int, seen map[string]bool) (Group, error) {
	where := fmt.Sprintf("%s/group %d", dev, j+1)
	m, name, err := object(raw, where)
	if err != nil {
		return Group{}, err
	}
	if err := child(name, "group", devNum, where, seen); err != nil {
		return Group{}, err
	}
	path := dev + "/" + name
	g := Group{Dev: name}
	list := func(key string, limit int) ([]json.RawMessage, error) {
		v, ok := m[key]
		if !ok {
			return nil, nil
		}
		delete(m, key)
		var out []json.RawMessage
		if err := json.Unmarshal(v, &out); err != nil {
			return nil, fmt.Errorf("%s: %q is not an array", path, key)
		}
		if len(out) > limit {
			return nil, fmt.Errorf("%s: %d %s (at most %d)", path, len(out), key, limit)
		}
		return out, nil
	}
	wqs, err := list("grouped_workqueues", MaxWQs)
	if err != nil {
		return Group{}, err
	}
	engines, err := list("grouped_engines", MaxEngines)
	if err != nil {
		return Group{}, err
	}
	if g.Extra, err = takeAttrs(m, nil, path); err != nil {
		return Group{}, err
	}
	for k, r := range wqs {
		w := fmt.Sprintf("%s/work queue %d", path, k+1)
		wm, wname, err := object(r, w)
		if err != nil {
			return Group{}, err
		}
		if err := child(wname, "wq", devNum, w, seen); err != nil {
			return Group{}, err
		}
		q := WQ{Dev: wname}
		if q.Extra, err = takeAttrs(wm, q.attrs(), path+"/"+wname); err != nil {
			return Group{}, err
		}
		g.WQs = append(g.WQs, q)
	}
	for k, r := range engines {
		w := fmt.Sprintf("%s/engine %d", path, k+1)
		em, ename, err := object(r, w)
		if err != nil {
			return Group{}, err
		}
		if err := child(ename, "engine", devNum, w, seen); err != nil {
			return Group{}, err
		}
		e := Engine{Dev: ename}
		if e.Extra, err = takeAttrs(em, e.attrs(), path+"/"+ename); err != nil {
			return Group{}, err
		}
		g.Engines = append(g.Engines, e)
	}
	return g, nil
}

// takeAttrs decodes the interpreted attributes out of m and returns the rest, compacted, or nil
// when there is none.
func takeAttrs(m map[string]json.RawMessage, attrs []attr, path string) (map[string]json.RawMessage, error) {
	for _, a := range attrs {
		raw, ok := m[a.key]
		if !ok {
			continue
		}
		delete(m, a.key)
		if err := decodeAttr(raw, a.ptr); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, a.key, err)
		}
	}
	if len(m) > MaxExtra {
		return nil, fmt.Errorf("%s: %d attributes this package does not know (at most %d)", path, len(m), MaxExtra)
	}
	if len(m) == 0 {
		return nil, nil
	}
	extra := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return nil, fmt.Errorf("%s: %.40q: %w", path, k, err)
		}
		extra[k] = b.Bytes()
	}
	return extra, nil
}

// decodeAttr decodes one attribute value into ptr (**int, **uint64 or *string).
func decodeAttr(raw json.RawMessage, ptr any) error {
	raw = bytes.TrimSpace(raw)
	switch p := ptr.(type) {
	case *string:
		if err := json.Unmarshal(raw, p); err != nil {
			return fmt.Errorf("want a string, got %.40s", raw)
		}
	case **int:
		v, err := strconv.ParseInt(string(raw), 10, 32)
		if err != nil {
			return fmt.Errorf("want a whole number, got %.40s", raw)
		}
		n := int(v)
		*p = &n
	case **uint64:
		v, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil {
			return fmt.Errorf("want a whole number of at least 0, got %.40s", raw)
		}
		*p = &v
	}
	return nil
}

// stripTrailingCommas returns data with every comma that is followed, after white space, by
// a closing bracket or brace replaced by a space (so offsets in errors stay right). Commas
// inside strings are left alone; a backslash inside a string escapes the next byte.
func stripTrailingCommas(data []byte) []byte {
	out := slices.Clone(data)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ',':
			j := i + 1
			for j < len(out) && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j++
			}
			if j < len(out) && (out[j] == ']' || out[j] == '}') {
				out[i] = ' '
			}
		}
	}
	return out
}

// Marshal writes c the way accel-config's save-config lays out its files (json-c's pretty
// printing: two-space indents, "key":value), deterministically: the interpreted attributes in
// accel-config's order, then Extra's in key order, then the children. Empty work queue and
// engine lists are left out, as accel-config does. It refuses what Parse would not read back
// as the same Config: an object name that is not accel-config's, a name listed twice, an
// Extra key that is a field of the object ("dev", "size", "groups"…), an Extra value that is
// not JSON.
func Marshal(c Config) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("accel-config: %w", err)
	}
	var b bytes.Buffer
	w := &writer{b: &b}
	w.open('[')
	for i := range c.Devices {
		d := &c.Devices[i]
		w.item(i)
		w.open('{')
		w.field("dev", d.Dev)
		w.attrs(d.attrs())
		w.extra(d.Extra)
		if len(d.Groups) > 0 {
			w.key("groups")
			w.open('[')
			for j := range d.Groups {
				g := &d.Groups[j]
				w.item(j)
				w.open('{')
				w.field("dev", g.Dev)
				w.extra(g.Extra)
				if len(g.WQs) > 0 {
					w.key("grouped_workqueues")
					w.open('[')
					for k := range g.WQs {
						q := &g.WQs[k]
						w.item(k)
						w.open('{')
						w.field("dev", q.Dev)
						w.attrs(q.attrs())
						w.extra(q.Extra)
						w.close('}')
					}
					w.close(']')
				}
				if len(g.Engines) > 0 {
					w.key("grouped_engines")
					w.open('[')
					for k := range g.Engines {
						e := &g.Engines[k]
						w.item(k)
						w.open('{')
						w.field("dev", e.Dev)
						w.attrs(e.attrs())
						w.extra(e.Extra)
						w.close('}')
					}
					w.close(']')
				}
				w.close('}')
			}
			w.close(']')
		}
		w.close('}')
	}
	w.close(']')
	b.WriteByte('\n')
	if w.err != nil {
		return nil, w.err
	}
	return b.Bytes(), nil
}

// writer writes json-c's pretty layout. first tracks, per open object, whether a key has
// been written; err keeps the first failure.
type writer struct {
	b     *bytes.Buffer
	depth int
	first []bool
	err   error
}

func (w *writer) newline() {
	w.b.WriteByte('\n')
	w.b.WriteString(strings.Repeat("  ", w.depth))
}

func (w *writer) open(c byte) {
	w.b.WriteByte(c)
	w.depth++
	w.first = append(w.first, true)
}

func (w *writer) close(c byte) {
	w.depth--
	w.first = w.first[:len(w.first)-1]
	w.newline()
	w.b.WriteByte(c)
}

// item starts array element i.
func (w *writer) item(i int) {
	if i > 0 {
		w.b.WriteByte(',')
	}
	w.newline()
}

// key starts a member of the innermost object.
func (w *writer) key(k string) {
	top := len(w.first) - 1
	if !w.first[top] {
		w.b.WriteByte(',')
	}
	w.first[top] = false
	w.newline()
	w.value(k)
	w.b.WriteByte(':')
}

func (w *writer) field(k string, v any) {
	w.key(k)
	w.value(v)
}

// value writes v as JSON, without escaping <, > and &.
func (w *writer) value(v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil && w.err == nil {
		w.err = err
	}
	w.b.Write(bytes.TrimRight(b.Bytes(), "\n"))
}

func (w *writer) attrs(as []attr) {
	for _, a := range as {
		switch p := a.ptr.(type) {
		case *string:
			if *p != "" {
				w.field(a.key, *p)
			}
		case **int:
			if *p != nil {
				w.field(a.key, **p)
			}
		case **uint64:
			if *p != nil {
				w.field(a.key, **p)
			}
		}
	}
}

func (w *writer) extra(m map[string]json.RawMessage) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w.key(k)
		var b bytes.Buffer
		if err := json.Compact(&b, m[k]); err != nil {
			if w.err == nil {
				w.err = fmt.Errorf("attribute %q: %w", k, err)
			}
			continue
		}
		w.b.Write(b.Bytes())
	}
}

// check makes sure Parse reads c's rendering back as c.
func (c Config) check() error {
	devs := map[string]bool{}
	for i := range c.Devices {
		d := &c.Devices[i]
		sm := reDevice.FindStringSubmatch(d.Dev)
		if sm == nil {
			return fmt.Errorf("device %d: %.40q is not an accelerator name (dsaN or iaxN)", i+1, d.Dev)
		}
		if devs[d.Dev] {
			return fmt.Errorf("%s: listed twice", d.Dev)
		}
		devs[d.Dev] = true
		if err := checkExtra(d.Extra, d.attrs(), d.Dev, "groups"); err != nil {
			return err
		}
		seen := map[string]bool{}
		for j := range d.Groups {
			g := &d.Groups[j]
			if err := child(g.Dev, "group", sm[2], fmt.Sprintf("%s/group %d", d.Dev, j+1), seen); err != nil {
				return err
			}
			path := d.Dev + "/" + g.Dev
			if err := checkExtra(g.Extra, nil, path, "grouped_workqueues", "grouped_engines"); err != nil {
				return err
			}
			for k := range g.WQs {
				q := &g.WQs[k]
				if err := child(q.Dev, "wq", sm[2], fmt.Sprintf("%s/work queue %d", path, k+1), seen); err != nil {
					return err
				}
				if err := checkExtra(q.Extra, q.attrs(), path+"/"+q.Dev); err != nil {
					return err
				}
			}
			for k := range g.Engines {
				e := &g.Engines[k]
				if err := child(e.Dev, "engine", sm[2], fmt.Sprintf("%s/engine %d", path, k+1), seen); err != nil {
					return err
				}
				if err := checkExtra(e.Extra, e.attrs(), path+"/"+e.Dev); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkExtra refuses Extra keys that are the object's own fields, too many keys, and values
// that are not JSON.
func checkExtra(m map[string]json.RawMessage, attrs []attr, path string, children ...string) error {
	if len(m) > MaxExtra {
		return fmt.Errorf("%s: %d extra attributes (at most %d)", path, len(m), MaxExtra)
	}
	reserved := append([]string{"dev"}, children...)
	for _, a := range attrs {
		reserved = append(reserved, a.key)
	}
	for k, v := range m {
		if slices.Contains(reserved, k) {
			return fmt.Errorf("%s: Extra holds %q, which is a field of its own: set the field instead", path, k)
		}
		if !json.Valid(v) {
			return fmt.Errorf("%s: Extra %.40q is not JSON", path, k)
		}
	}
	return nil
}
