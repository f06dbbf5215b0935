//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// startPageDaemon runs ovsplaned (embedded OVSDB, simulated ovs-vswitchd) with its data dir
// dir, its API on a unix socket in dir and the further flags extra; it returns the socket's
// path once GET probe (a path of the API, e.g. /overlay/v1/nodes) answers 200 OK through it.
// The daemon is stopped, and an error from it reported, when the test ends.
func startPageDaemon(t *testing.T, dir string, extra []string, probe string) string {
	t.Helper()
	sock := filepath.Join(dir, "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	done := make(chan error, 1)
	args := append([]string{"--embedded", "--data-dir", dir, "--api-listen", "unix:" + sock, "--log-level", "error"}, extra...)
	go func() { done <- run(ctx, args, nil, nil, &out, &errOut) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ovsplaned: %v\nstderr:\n%s", err, errOut.String())
		}
	})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	lab.WaitFor(t, 60*time.Second, "ovsplaned to answer "+probe+" on "+sock, func(ctx context.Context) error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("ovsplaned ended: %v\nstderr:\n%s", err, errOut.String())
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://ovsplaned"+probe, nil)
		if err != nil {
			return err
		}
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(res.Body)
			return fmt.Errorf("%s: %s", res.Status, body)
		}
		return nil
	})
	return sock
}
