package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: --check accepts a valid overlay-agent configuration (inline or in a file) and
// names the field of an invalid one, with exit status 2.
func TestCheck(t *testing.T) {
	good := `{"node": {"name": "a", "kind": "ordinary", "underlay": ["10.10.0.2"]}, "fabric_remotes": ["tcp:10.0.0.1:6641"],
	  "bridge": "br-int", "tunnel_port": "ovl0", "prefixes": {"a": ["192.168.1.0/24"]}}`
	file := filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{good, file} {
		var out, errOut bytes.Buffer
		if rc := runCLI([]string{"--check", arg}, &out, &errOut); rc != 0 || !strings.HasPrefix(out.String(), "ok: node a (ordinary) on bridge br-int through ovl0") {
			t.Errorf("--check %.20s: exit %d, %q %q", arg, rc, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	bad := strings.Replace(good, `"ordinary"`, `"hub"`, 1)
	if rc := runCLI([]string{"--check", bad}, &out, &errOut); rc != 2 || !strings.Contains(errOut.String(), "config.node") {
		t.Errorf("bad kind: exit %d, %q", rc, errOut.String())
	}
	if rc := runCLI(nil, &out, &errOut); rc != 2 {
		t.Errorf("no arguments: exit %d", rc)
	}
}
