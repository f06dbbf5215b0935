package sdk

import (
	"context"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// halfPort lists a port type but forgot Validate and Attach.
type halfPort struct{ Base }

func (*halfPort) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "half", Version: "1", Types: []api.ObjectType{{Name: "half", Kind: api.ObjectKindPort}}}, nil
}

// TestCheckInfoNamesMissingMethods: Serve's refusal of a port type without a port provider
// says what the type lacks.
func TestCheckInfoNamesMissingMethods(t *testing.T) {
	_, err := checkInfo(&halfPort{})
	if err == nil || !strings.Contains(err.Error(), "without the port_provider capability") ||
		!strings.Contains(err.Error(), "*sdk.halfPort serves no port type: it needs Validate, Attach") {
		t.Fatalf("checkInfo = %v, want the missing methods named", err)
	}
}
