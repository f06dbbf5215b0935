// Package schema holds the Open_vSwitch database schema that ovsplane is built against
// (vswitch.ovsschema of OVS 3.1.0, version 8.3.1): the source of the generated models in
// ovsdb/vswitch, and the schema vsctl resolves tables and columns with. It has no
// dependencies, so small programs can embed it without pulling in libovsdb.
package schema

import _ "embed"

//go:embed vswitch.ovsschema
var schemaJSON []byte

// JSON returns the schema's JSON text. Callers may modify the returned copy.
func JSON() []byte { return append([]byte(nil), schemaJSON...) }
