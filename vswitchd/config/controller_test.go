package config

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
)

// TestValidateControllerTargets: controller targets are checked past their prefix (port range,
// host, control characters, length, duplicates), each error naming its key path.
func TestValidateControllerTargets(t *testing.T) {
	c := &Config{DataDir: "/var/lib/ovsplane", API: API{SocketMode: "0660"}, Log: Log{Level: "info", Format: "text"},
		Bridges: []model.Bridge{{Name: "br0", Controllers: []string{
			"tcp:127.0.0.1:6653", "tcp:127.0.0.1:99999", "tcp:127.0.0.1:6653\x07", "tcp:127.0.0.1:6653",
			"unix:/" + strings.Repeat("x", 300), "ptcp:6653:127.0.0.1"}}}}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted bad controller targets")
	}
	for _, want := range []string{
		`bridges[0].controller[1]: controller target "tcp:127.0.0.1:99999" has a port outside 1-65535`,
		`bridges[0].controller[2]: controller target "tcp:127.0.0.1:6653\a" contains white space, control characters`,
		`bridges[0].controller[3]: duplicate controller target "tcp:127.0.0.1:6653" (also controller[0])`,
		`bridges[0].controller[4]: controller target "unix:/xxx`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors\n%v\nlack %q", err, want)
		}
	}
	for _, ok := range []string{"bridges[0].controller[0]:", "bridges[0].controller[5]:"} {
		if strings.Contains(err.Error(), ok) {
			t.Errorf("valid %s refused: %v", ok, err)
		}
	}
	if err := desired.ValidateBridge(model.Bridge{Name: "br1", Controllers: []string{"ssl:ctl.example.com:6653", "tcp:[::1]"}}); err != nil {
		t.Errorf("ValidateBridge refused valid targets: %v", err)
	}
	if err := desired.ValidateBridge(model.Bridge{Name: "br1", Controllers: []string{"tcp:bad host"}}); err == nil || !strings.HasPrefix(err.Error(), "bridge.controller[0]: ") {
		t.Errorf("ValidateBridge(tcp:bad host) = %v, want an error at bridge.controller[0]", err)
	}
}
