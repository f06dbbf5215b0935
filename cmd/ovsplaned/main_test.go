package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// The quickstart configuration converges on the embedded OVSDB with the simulated
// ovs-vswitchd, and a restart on the same data directory finds everything still there.
func TestOnceOnEmbeddedDatabase(t *testing.T) {
	dir := testkit.ShortTempDir(t, "ovsplaned-") // the embedded server's unix socket
	cfg, err := filepath.Abs("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var out, errOut bytes.Buffer
		err := run(ctx, []string{"--config", cfg, "--embedded", "--data-dir", dir, "--once", "--log-level", "error"}, nil, nil, &out, &errOut)
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v\nstdout:\n%s\nstderr:\n%s", i+1, err, out.String(), errOut.String())
		}
		for _, want := range []string{"SIMULATED", "bridge/br-dpdk", "interface/vhu-vm1", "interface/mgmt0"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("run %d: output lacks %q:\n%s", i+1, want, out.String())
			}
		}
		if strings.Contains(out.String(), "error") || strings.Contains(out.String(), "pending") {
			t.Errorf("run %d: not everything ready:\n%s", i+1, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ovsdb", "conf.db")); err != nil {
		t.Errorf("embedded database not persisted: %v", err)
	}
}

// ovsdb.reconnect_wait reaches the daemon's commit options; unset, they carry 0, which
// vswitchd.New turns into vswitchd.DefaultReconnectWait.
func TestCommitOptionsCarryReconnectWait(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"OVSPLANE_OVSDB_RECONNECT_WAIT=42s"}, 42 * time.Second},
	} {
		cfg, err := config.Load(context.Background(), config.Options{Env: tc.env})
		if err != nil {
			t.Fatal(err)
		}
		if got := commitOptions(cfg).ReconnectWait; got != tc.want {
			t.Errorf("env %q: Commit.ReconnectWait = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// ovsdb.apply_timeout reaches the daemon's commit options; unset, they carry 0, which the
// writer and ovsdb.Commit read as ovsdb.DefaultApplyTimeout.
func TestCommitOptionsCarryApplyTimeout(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"OVSPLANE_OVSDB_APPLY_TIMEOUT=10m"}, 10 * time.Minute},
	} {
		cfg, err := config.Load(context.Background(), config.Options{Env: tc.env})
		if err != nil {
			t.Fatal(err)
		}
		if got := commitOptions(cfg).ApplyTimeout; got != tc.want {
			t.Errorf("env %q: Commit.ApplyTimeout = %v, want %v", tc.env, got, tc.want)
		}
	}
}
