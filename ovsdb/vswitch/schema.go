package vswitch

import _ "embed"

//go:embed vswitch.ovsschema
var schemaJSON []byte

// SchemaJSON returns the Open_vSwitch database schema these models were generated from
// (vswitch.ovsschema of OVS 3.1.0, version 8.3.1). Callers may modify the returned copy.
func SchemaJSON() []byte { return append([]byte(nil), schemaJSON...) }
