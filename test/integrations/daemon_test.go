package integrations

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// repoRoot is the module root, relative to this package's directory.
const repoRoot = "../.."

// daemon is an ovsplaned started for one test.
type daemon struct {
	// Sock is the API's unix socket.
	Sock string
	// hc is an HTTP client whose every connection goes to Sock (one client, so that polling
	// reuses its connections instead of piling up idle ones on the daemon).
	hc *http.Client
}

// buildTool builds the command at ./cmd/NAME into dir and returns the binary's path.
func buildTool(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin
}

// startDaemon builds ./cmd/ovsplaned and runs it with its API on a unix socket in a fresh
// directory, until the test ends; it returns once Health answers. args choose the OVSDB and the
// configuration; none means --embedded (the daemon's own OVSDB with a simulated ovs-vswitchd).
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "itg") // short: unix socket paths must fit 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := buildTool(t, dir, "ovsplaned")
	if len(args) == 0 {
		args = []string{"--embedded"}
	}
	d := &daemon{Sock: filepath.Join(dir, "api.sock")}
	d.hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.Sock)
	}}}
	t.Cleanup(d.hc.CloseIdleConnections)
	var stderr testkit.LogBuffer // written by exec's copying goroutine while the test reads it
	cmd := exec.Command(bin, append([]string{"--data-dir", filepath.Join(dir, "data"),
		"--api-listen", "unix:" + d.Sock, "--log-level", "info"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ovsplaned's log:\n%s", stderr.String())
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("ovsplaned exited with %v on SIGTERM:\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("ovsplaned did not stop within 30s of SIGTERM:\n%s", stderr.String())
		}
	})
	hc := d.hc
	lab.WaitFor(t, 60*time.Second, "ovsplaned to answer Health on "+d.Sock, func(ctx context.Context) error {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("ovsplaned ended: %v\n%s", err, stderr.String())
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost,
			"http://ovsplaned/ovsplane.v1.SwitchService/Health", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("Health: %s", res.Status)
		}
		return nil
	})
	return d
}

// exitCode is a finished command's exit status: 0 for a nil error, -1 when it did not exit
// normally.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}
