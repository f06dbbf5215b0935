package vsctl

import (
	"reflect"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
	vsschema "github.com/ovsplane/ovsplane/ovsdb/vswitch/schema"
)

// schema_gen.go must say exactly what the schema file says; regenerate it with
// `go generate ./internal/cli/vsctl` when the schema changes.
func TestGeneratedSchemaIsCurrent(t *testing.T) {
	want, err := dbcmd.ParseSchema(vsschema.JSON())
	if err != nil {
		t.Fatal(err)
	}
	got := vswitchSchema()
	if len(got.Tables) != len(want.Tables) {
		t.Fatalf("schema_gen.go has %d tables, the schema %d: run go generate ./internal/cli/vsctl", len(got.Tables), len(want.Tables))
	}
	for name, wt := range want.Tables {
		if !reflect.DeepEqual(got.Tables[name], wt) {
			t.Errorf("table %s differs from the schema file: run go generate ./internal/cli/vsctl", name)
		}
	}
	if got.Name != want.Name || got.Version != want.Version {
		t.Errorf("schema %s %s, want %s %s", got.Name, got.Version, want.Name, want.Version)
	}
}
