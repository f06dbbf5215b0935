package desired

import (
	"fmt"
	"math"
	"regexp"
	"time"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds the YAML nodes a file may expand to (aliases included), and maxAliasedNodes
// the nodes reached through aliases, so a small hostile file (an alias bomb: nine anchors of
// nine references each expand to 9^9 nodes) cannot make Load allocate without bound: each node
// costs a few hundred bytes of paths and values, so 2^16 aliased nodes stay under ~20 MB.
const (
	maxNodes        = 1 << 20
	maxAliasedNodes = 1 << 16
)

// nodeBudget is what convert may still expand: nodes in all, and nodes reached through aliases.
type nodeBudget struct{ nodes, aliased int }

// Parse turns a document into a tree of map[string]any, []any, string (every scalar, in
// its literal text) and nil (null). An empty document is an empty map. Under a plugin's free-form config
// (plugins[i].config) scalars keep their YAML types instead. The document is bounded (nodes,
// aliases, depth) and refused when it is not a mapping, uses merge keys or repeats a key.
func Parse(data []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return map[string]any{}, nil
	}
	budget := nodeBudget{nodes: maxNodes, aliased: maxAliasedNodes}
	v, err := convert(doc.Content[0], "", &budget, 0, false, false)
	if err != nil {
		return nil, err
	}
	switch m := v.(type) {
	case map[string]any:
		return m, nil
	case nil:
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("line %d: the document must be a mapping of keys to values", doc.Content[0].Line)
}

// convert turns n into the tree Parse describes; under a plugin's config (typed), scalars
// keep their YAML types instead. aliased says n was reached through an alias.
func convert(n *yaml.Node, path string, budget *nodeBudget, depth int, typed, aliased bool) (any, error) {
	budget.nodes--
	if aliased {
		budget.aliased--
	}
	if budget.nodes < 0 {
		return nil, fmt.Errorf("document too large: too many nodes (more than %d)", maxNodes)
	}
	if budget.aliased < 0 {
		return nil, fmt.Errorf("document too large: aliases expand to too many nodes (more than %d, at %s); write the values out or use fewer aliases", maxAliasedNodes, display(path))
	}
	if depth > 64 {
		return nil, fmt.Errorf("%s: nested too deeply", display(path))
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("%s: unresolved alias", display(path))
		}
		return convert(n.Alias, path, budget, depth+1, typed, true)
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return nil, nil
		}
		if typed {
			return pluginConfigScalar(n, path)
		}
		return n.Value, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := convert(c, fmt.Sprintf("%s[%d]", path, i), budget, depth+1, typed, aliased)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
				return nil, fmt.Errorf("line %d: %s: keys must be plain strings", k.Line, display(path))
			}
			if k.Value == "<<" && k.Style == 0 {
				return nil, fmt.Errorf("line %d: %s: merge keys (<<) are not supported", k.Line, display(path))
			}
			p := JoinPath(path, k.Value)
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: %s: duplicate key", k.Line, p)
			}
			pluginConfig := isPluginConfig(p)
			v, err := convert(n.Content[i+1], p, budget, depth+1, typed || pluginConfig, aliased)
			if err != nil {
				return nil, err
			}
			if _, isMap := v.(map[string]any); pluginConfig && !isMap && v != nil {
				return nil, fmt.Errorf("line %d: %s: must be a mapping of keys to values", k.Line, p)
			}
			out[k.Value] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: %s: unsupported YAML node", n.Line, display(path))
}

// JoinPath appends key to a dotted key path ("api" + "listen" → "api.listen").
func JoinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func display(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

var pluginConfigAt = regexp.MustCompile(`^plugins\[\d+\]\.(jobs\[\d+\]\.)?config$`)

// isPluginConfig reports whether path is a plugin's or a plugin job's free-form config map.
func isPluginConfig(path string) bool { return pluginConfigAt.MatchString(path) }

// maxExactInt is the largest integer a JSON number (a float64 for most readers) holds exactly.
const maxExactInt = 1 << 53

// pluginConfigScalar decodes a scalar of a plugin's config with its YAML type, normalised to
// what survives JSON and a YAML round trip: integers as int64, integral floats within ±2^53 as
// int64, other finite floats as float64, timestamps as their text, strings, booleans.
func pluginConfigScalar(n *yaml.Node, path string) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("line %d: %s: %w", n.Line, path, err)
	}
	switch x := v.(type) {
	case string, bool, nil, int64:
		return x, nil
	case int:
		return int64(x), nil
	case uint64:
		return normaliseFloat(float64(x), n, path)
	case float64:
		return normaliseFloat(x, n, path)
	case time.Time:
		return n.Value, nil
	}
	return nil, fmt.Errorf("line %d: %s: unsupported value %q", n.Line, path, n.Value)
}

func normaliseFloat(f float64, n *yaml.Node, path string) (any, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return nil, fmt.Errorf("line %d: %s: %s is not a JSON number (quote it for a string)", n.Line, path, n.Value)
	case f == math.Trunc(f) && math.Abs(f) <= maxExactInt:
		return int64(f), nil
	}
	return f, nil
}
