package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// TestRefusedAttachAnswer: an Attach the plugin answered with a shape the host's checks refuse
// fails with an *api.RefusedAnswerError carrying the answer's State (what the caller's Detach
// passes back), code Internal and a message naming the plugin, the port and the field; the
// plugin's process stays up.
func TestRefusedAttachAnswer(t *testing.T) {
	f := newFixture(t)
	f.start(f.install("v1", "nully"))
	pp, _, ok := f.h.PortProvider("nully-port")
	if !ok {
		t.Fatal("no provider of nully-port")
	}
	_, err := pp.Attach(t.Context(), port("nully", "n0", map[string]string{"mode": "nul-name"}))
	var refused *api.RefusedAnswerError
	if !errors.As(err, &refused) {
		t.Fatalf("Attach with a NUL in the answer's interface name: %v (%T), want *api.RefusedAnswerError", err, err)
	}
	if refused.Plugin != "nully" || string(refused.State) != `{"ok":true}` {
		t.Errorf("refusal: plugin %q, state %q; want nully and the answer's state", refused.Plugin, refused.State)
	}
	code, msg := codeOf(err)
	for _, want := range []string{`plugin "nully"`, "br0/n0", "ports[0].interfaces[0].name"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not name %s", msg, want)
		}
	}
	if code != api.Internal {
		t.Errorf("code %s, want internal", code)
	}
	if st := f.status("nully"); st.State != StateRunning {
		t.Errorf("state %s after a refused answer", st.State)
	}
	// A good answer of the same plugin is no refusal.
	if _, err := pp.Attach(t.Context(), port("nully", "n1", nil)); err != nil {
		t.Errorf("Attach of a good answer: %v", err)
	}
}
