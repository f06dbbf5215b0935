package desired

import "fmt"

// listShape describes a key of the desired state whose value must be a YAML list, and the
// list-valued keys inside each of its items.
type listShape struct {
	what  string               // what one item is, for the message ("bridge", "port"…)
	items map[string]listShape // list-valued keys of each item
}

// desiredLists are the list-valued keys of the desired state and of the plugin list. The
// decoder's weak typing would read a mapping there as a list of one item (and an empty
// mapping as an empty list: `bridges: {}` would prune every bridge), so ListShapes rejects
// them first.
var desiredLists = map[string]listShape{
	"bridges": {what: "bridge", items: map[string]listShape{
		"protocols":      {what: "protocol"},
		"controller":     {what: "controller target"},
		"collector_sets": {what: "IPFIX collector set"},
		"mirrors":        {what: "mirror"},
		"ports": {what: "port", items: map[string]listShape{
			"trunks":     {what: "VLAN"},
			"interfaces": {what: "interface"},
		}},
	}},
	"plugins": {what: "plugin", items: map[string]listShape{
		"env":  {what: "variable name"},
		"jobs": {what: "job"},
	}},
}

// ListShapes returns one error per list-valued key of desired (the file's bridges, plugins…
// as parsed by Parse) that holds a mapping instead of a list, naming its path and the fix.
func ListShapes(desired map[string]any) []error {
	var errs []error
	var walk func(path string, v any, s listShape)
	walk = func(path string, v any, s listShape) {
		switch x := v.(type) {
		case map[string]any:
			errs = append(errs, fmt.Errorf(
				"%s: must be a list, not a mapping (a mapping would be read as a single %s, and an empty one, {}, as no %s at all); write one item per %s, each on its own line starting with \"- \"",
				path, s.what, s.what, s.what))
		case []any:
			for i, item := range x {
				m, ok := item.(map[string]any)
				if !ok {
					continue
				}
				for _, k := range sortedKeys(s.items) {
					if sub, present := m[k]; present {
						walk(fmt.Sprintf("%s[%d].%s", path, i, k), sub, s.items[k])
					}
				}
			}
		}
	}
	for _, k := range sortedKeys(desiredLists) {
		if v, ok := desired[k]; ok {
			walk(k, v, desiredLists[k])
		}
	}
	return errs
}
