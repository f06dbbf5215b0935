package integrations

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// debianPython is the interpreter the example promises to run on: Debian's, with its standard
// library only (not a pyenv or virtualenv python3 that may come first on $PATH).
const debianPython = "/usr/bin/python3"

// TestPythonExample runs examples/python/example.py with Debian's python3 against a live
// ovsplaned: every step of the example (Health, ApplyBridge, ApplyPort, WaitReady, GetPort,
// Watch's snapshot, two refused calls, DeletePort, DeleteBridge) must print what the daemon
// really did.
func TestPythonExample(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("%s is required (Debian package python3-minimal): %v", debianPython, err)
	}
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join(repoRoot, "examples", "python", "example.py"))
	if err != nil {
		t.Fatal(err)
	}
	// -B: no __pycache__ written into the source tree. -E -s: neither $PYTHONPATH nor the user's
	// site-packages can supply a module the example would then silently depend on; the script's
	// directory (where ovsplane_client.py is) stays on sys.path.
	cmd := exec.CommandContext(ctx, debianPython, "-B", "-E", "-s", script, "--socket", d.Sock, "--bridge", "br-py", "--port", "vm1-eth0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("example.py: %v\n%s", err, out)
	}
	want := []string{
		"health: version ", "mode MODE_EMBEDDED, api ovsplane.v1",
		"bridge br-py: STATE_READY",
		"port vm1-eth0: STATE_READY",
		"ready: port/vm1-eth0=STATE_READY interface/vm1-eth0=STATE_READY",
		"get: vm1-eth0 on br-py tag 100 ofport 1 vm-id 3f6c2a51-8e0d-4b7a-9c11-0d2e4f6a8b90",
		"watch snapshot: bridge/br-py interface/vm1-eth0 port/vm1-eth0",
		"error: not_found",
		"bad tag: invalid_argument",
		"deleted: yes",
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("example.py output lacks %q:\n%s", w, out)
		}
	}
	// And the daemon agrees the objects are gone.
	res, err := d.hc.Post("http://ovsplaned/ovsplane.v1.SwitchService/ListStatus", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || strings.Contains(string(body), "br-py") {
		t.Errorf("ListStatus after the example: %s %s; want 200 without br-py", res.Status, body)
	}
}

// TestPythonClientUnreachable: the client reports a daemon it cannot reach as unavailable,
// naming the socket, rather than with a Python traceback.
func TestPythonClientUnreachable(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("%s is required (Debian package python3-minimal): %v", debianPython, err)
	}
	script, err := filepath.Abs(filepath.Join(repoRoot, "examples", "python", "example.py"))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "none.sock")
	out, err := exec.CommandContext(t.Context(), debianPython, "-B", "-E", "-s", script, "--socket", sock).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "ovsplaned: unavailable: cannot reach ovsplaned at unix:"+sock) || strings.Contains(string(out), "Traceback") {
		t.Errorf("example.py on a missing socket: exit %d, output:\n%s\nwant exit 1 and an unavailable error naming the socket", code, out)
	}
}
