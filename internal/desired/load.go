package desired

import (
	"maps"
	"slices"

	"errors"
	"fmt"
	"strings"

	"github.com/ovsplane/ovsplane/model"

	"github.com/go-viper/mapstructure/v2"
)

// DecodeErrors turns mapstructure's errors into "path: problem" errors, one per unknown key.
func DecodeErrors(err error) []error {
	var out []error
	for _, e := range Flatten(err) {
		var de *mapstructure.DecodeError
		if !errors.As(e, &de) {
			out = append(out, e)
			continue
		}
		if inner := Flatten(de.Unwrap()); len(inner) > 1 {
			out = append(out, DecodeErrors(de.Unwrap())...)
			continue
		}
		msg := de.Unwrap().Error()
		if keys, ok := strings.CutPrefix(msg, "has invalid keys: "); ok {
			for _, k := range strings.Split(keys, ", ") {
				out = append(out, fmt.Errorf("%s: unknown key", JoinPath(de.Name(), k)))
			}
			continue
		}
		out = append(out, fmt.Errorf("%s: %s", display(de.Name()), msg))
	}
	return out
}

// Flatten returns the leaves of an errors.Join tree, each problem on its own: the shape in
// which Load, DecodeErrors and the daemon's configuration loader report problems. It returns
// nil for nil and err alone when it joins nothing.
func Flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// Decode decodes tree (the desired-state keys of a document, as Parse returns them) into
// result, a pointer to a struct whose fields carry mapstructure tags: names match exactly,
// unknown keys are errors, and scalars (all text in tree) convert to the field's type. It
// returns one "path: problem" error per problem (see DecodeErrors).
func Decode(tree map[string]any, result any) []error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		MatchName:        func(mapKey, fieldName string) bool { return mapKey == fieldName },
		Result:           result,
	})
	if err != nil {
		return []error{fmt.Errorf("building decoder: %w", err)}
	}
	if err := dec.Decode(tree); err != nil {
		return DecodeErrors(err)
	}
	return nil
}

// State is a desired state read on its own (Load): the global other_config keys and the
// bridges with their ports, as in the configuration file.
type State struct {
	OtherConfig map[string]string `mapstructure:"other_config"`
	Bridges     []model.Bridge    `mapstructure:"bridges"`
}

// Load reads a YAML document holding only desired-state keys (bridges, other_config) and
// checks it with the configuration file's rules and messages (the same ones vswitchd/config's
// Load applies to these keys). It returns the state, with empty lists and maps nil, or an
// error "SOURCE: N problem(s):" followed by every problem, one per line, each naming its key
// path. source names the document in the error. Load does no I/O.
func Load(source string, data []byte) (State, error) {
	s, errs := load(data)
	if len(errs) > 0 {
		return State{}, fmt.Errorf("%s: %d problem(s):\n%w", source, len(errs), errors.Join(errs...))
	}
	return s, nil
}

func load(data []byte) (State, []error) {
	tree, err := Parse(data)
	if err != nil {
		return State{}, []error{err}
	}
	var errs []error
	for _, k := range sortedKeys(tree) {
		if k != "bridges" && k != "other_config" {
			errs = append(errs, fmt.Errorf("%s: unknown key (known keys: bridges, other_config)", k))
		}
	}
	errs = append(errs, ListShapes(tree)...)
	if len(errs) > 0 {
		return State{}, errs
	}
	var s State
	if errs := Decode(tree, &s); len(errs) > 0 {
		return State{}, errs
	}
	nilIfEmptyMap(&s.OtherConfig)
	s.Bridges = NormalizeBridges(s.Bridges)
	v := &Validator{}
	if !v.TooManyObjects(s.Bridges) {
		v.Desired(s.OtherConfig, s.Bridges)
	}
	if err := v.Err(); err != nil {
		return State{}, Flatten(err)
	}
	return s, nil
}

// NormalizeBridges turns the empty lists and maps of bridges (and of their ports and
// interfaces) into nil, in place, so that `protocols: []` and no protocols load the same; it
// returns nil for no bridges, else bridges.
func NormalizeBridges(bridges []model.Bridge) []model.Bridge {
	nilIfEmpty(&bridges)
	for bi := range bridges {
		b := &bridges[bi]
		nilIfEmpty(&b.Protocols)
		nilIfEmpty(&b.Controllers)
		nilIfEmptyMap(&b.OtherConfig)
		nilIfEmptyMap(&b.ExternalIDs)
		nilIfEmpty(&b.Ports)
		for pi := range b.Ports {
			p := &b.Ports[pi]
			nilIfEmpty(&p.Trunks)
			nilIfEmptyMap(&p.OtherConfig)
			nilIfEmptyMap(&p.ExternalIDs)
			nilIfEmpty(&p.Interfaces)
			for ii := range p.Interfaces {
				in := &p.Interfaces[ii]
				nilIfEmptyMap(&in.Options)
				nilIfEmptyMap(&in.OtherConfig)
				nilIfEmptyMap(&in.ExternalIDs)
			}
		}
	}
	return bridges
}

func nilIfEmpty[T any](s *[]T) {
	if len(*s) == 0 {
		*s = nil
	}
}

func nilIfEmptyMap[V any](m *map[string]V) {
	if len(*m) == 0 {
		*m = nil
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
