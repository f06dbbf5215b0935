package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// DecodeConfig decodes a plugin's configuration (api.ConfigureRequest.Config, a JSON object)
// into dst, strictly: unknown fields are refused. Empty data or "null" leaves dst as it is, so
// dst may hold defaults. It returns nil, or an *api.Error with code InvalidArgument whose
// Problems name the field as "config.PATH".
func DecodeConfig(data []byte, dst any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if _, extra := dec.Token(); !errors.Is(extra, io.EOF) {
			return Invalid(api.Problem{Field: "config", Message: "trailing data after the JSON object"})
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var invalid *json.InvalidUnmarshalError
	switch {
	case errors.As(err, &typeErr):
		return Invalid(api.Problem{Field: fieldPath(typeErr.Field), Message: "must be " + jsonKind(typeErr.Type.Kind().String()) + ", not " + typeErr.Value})
	case errors.As(err, &syntaxErr):
		return Invalid(api.Problem{Field: "config", Message: "not JSON: " + syntaxErr.Error()})
	case errors.As(err, &invalid):
		return api.Errorf(api.Internal, "sdk: config destination: %v", err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return Invalid(api.Problem{Field: fieldPath(name), Message: "unknown field"})
	}
	return Invalid(api.Problem{Field: "config", Message: err.Error()})
}

func fieldPath(f string) string {
	if f == "" {
		return "config"
	}
	return "config." + f
}

func jsonKind(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"), strings.HasPrefix(goKind, "float"):
		return "a number"
	case goKind == "bool":
		return "true or false"
	case goKind == "string":
		return "a string"
	case goKind == "slice" || goKind == "array":
		return "a list"
	case goKind == "struct" || goKind == "map":
		return "an object"
	}
	return goKind
}
