package sdk

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// DecodeOptions decodes a port's options (OVS options are strings) into the fields of the
// struct dst points to that carry an `option:"NAME"` tag (`option:"NAME,required"` for a
// required one). A field keeps its value when its option is absent, so dst may hold defaults.
//
// Field types: string, bool (strconv.ParseBool), signed and unsigned integers, floats,
// time.Duration (time.ParseDuration), []string (comma-separated, spaces trimmed), any type
// implementing encoding.TextUnmarshaler (netip.Addr, netip.Prefix, ...), and pointers to
// these (set only when the option is present).
//
// It returns nil, or an *api.Error with code InvalidArgument whose Problems name every bad
// option as "options.NAME" (unknown options included), or code Internal when dst is not a
// pointer to a struct or has a field of an unsupported type (a plugin bug).
func DecodeOptions(opts map[string]string, dst any) error {
	fields, err := optionFields(dst)
	if err != nil {
		return err
	}
	var ps []api.Problem
	known := map[string]bool{}
	for _, f := range fields {
		known[f.name] = true
		s, ok := opts[f.name]
		if !ok {
			if f.required {
				ps = append(ps, api.Problem{Field: "options." + f.name, Message: "is required"})
			}
			continue
		}
		if err := setString(f.value, s); err != nil {
			ps = append(ps, api.Problem{Field: "options." + f.name, Message: err.Error()})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if !known[k] {
			ps = append(ps, api.Problem{Field: "options." + k, Message: "unknown option (known: " + strings.Join(slices.Sorted(maps.Keys(known)), ", ") + ")"})
		}
	}
	if len(ps) > 0 {
		return Invalid(ps...)
	}
	return nil
}

type optionField struct {
	name     string
	required bool
	doc      string
	value    reflect.Value
}

func optionFields(dst any) ([]optionField, error) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, api.Errorf(api.Internal, "sdk: options destination %T is not a pointer to a struct", dst)
	}
	v = v.Elem()
	var fields []optionField
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		tag, ok := sf.Tag.Lookup("option")
		if !ok || !sf.IsExported() {
			continue
		}
		name, flags, _ := strings.Cut(tag, ",")
		f := optionField{name: name, required: flags == "required", doc: sf.Tag.Get("doc"), value: v.Field(i)}
		if name == "" {
			return nil, api.Errorf(api.Internal, "sdk: field %s of %T has an empty option name", sf.Name, dst)
		}
		if !supported(sf.Type) {
			return nil, api.Errorf(api.Internal, "sdk: field %s of %T: unsupported option type %s", sf.Name, dst, sf.Type)
		}
		fields = append(fields, f)
	}
	return fields, nil
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	textType     = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func supported(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textType) || t == durationType {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// setString parses s into v; the error is a message for a Problem.
func setString(v reflect.Value, s string) error {
	if v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		if err := setString(p.Elem(), s); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		if err := u.UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
		return nil
	}
	if v.Type() == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 1.5s or 300ms", s)
		}
		v.SetInt(int64(d))
		return nil
	}
	return setScalar(v, s)
}

func setScalar(v reflect.Value, s string) error {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 0, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not an integer of %d bits", s, v.Type().Bits())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 0, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a non-negative integer of %d bits", s, v.Type().Bits())
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(n)
	case reflect.Slice:
		var items []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		v.Set(reflect.ValueOf(items).Convert(v.Type()))
	}
	return nil
}

// OptionsSchema returns the JSON schema of the options decoded into a struct of the type v
// (or v points to) by DecodeOptions, for api.ObjectType.OptionsSchema: an object of strings,
// with each field's `doc:"..."` tag as its description, a pattern for numbers and booleans,
// the required options, and no other property.
func OptionsSchema(v any) (string, error) {
	rv := reflect.New(reflect.TypeOf(v))
	if t := reflect.TypeOf(v); t.Kind() == reflect.Pointer {
		rv = reflect.New(t.Elem())
	}
	fields, err := optionFields(rv.Interface())
	if err != nil {
		return "", err
	}
	props := map[string]any{}
	required := []string{}
	for _, f := range fields {
		p := map[string]any{"type": "string"}
		if f.doc != "" {
			p["description"] = f.doc
		}
		if pattern := patternOf(f.value.Type()); pattern != "" {
			p["pattern"] = pattern
		}
		props[f.name] = p
		if f.required {
			required = append(required, f.name)
		}
	}
	schema := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
	b, err := json.Marshal(schema)
	return string(b), err
}

// PortType is the api.ObjectType, for Info.Types, of a port type whose options DecodeOptions
// decodes into a struct of the type of options: its OptionsSchema, and doc for humans.
func PortType(name string, options any, doc string) (api.ObjectType, error) {
	schema, err := OptionsSchema(options)
	if err != nil {
		return api.ObjectType{}, err
	}
	return api.ObjectType{Name: name, Kind: api.ObjectKindPort, OptionsSchema: schema, Doc: doc}, nil
}

func patternOf(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType {
		return `^[0-9.]+(ns|us|µs|ms|s|m|h)([0-9.]+(ns|us|µs|ms|s|m|h))*$`
	}
	switch t.Kind() {
	case reflect.Bool:
		return `^(1|0|t|f|T|F|true|false|TRUE|FALSE|True|False)$`
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return `^-?(0x[0-9a-fA-F]+|[0-9]+)$`
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return `^(0x[0-9a-fA-F]+|[0-9]+)$`
	}
	return ""
}

// Invalid returns an *api.Error with code InvalidArgument carrying the problems, its message
// listing them ("options.netns: is required; ...").
func Invalid(problems ...api.Problem) error {
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.String()
	}
	return &api.Error{Code: api.InvalidArgument, Message: strings.Join(msgs, "; "), Problems: problems}
}

// ProblemsOf splits the result of a decode for PortProvider.Validate: the problems of an
// InvalidArgument *api.Error (so they are returned as the request's problems), or the error
// itself for anything else.
//
//	func (p *Plugin) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) {
//		var o options
//		return sdk.ProblemsOf(sdk.DecodeOptions(req.Options, &o))
//	}
func ProblemsOf(err error) ([]api.Problem, error) {
	var e *api.Error
	if errors.As(err, &e) && e.Code == api.InvalidArgument && len(e.Problems) > 0 {
		return e.Problems, nil
	}
	return nil, err
}
