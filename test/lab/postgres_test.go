//go:build linux

package lab

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPostgresRestart starts a private server, writes a row through psql, stops and restarts
// the server, and reads the row back.
func TestPostgresRestart(t *testing.T) {
	p := StartPostgres(t)
	psql := func(ctx context.Context, sql string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(PostgresBinDir, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
			p.ConnString("postgres"), "-c", sql)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := psql(t.Context(), "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatalf("psql: %v: %s", err, out)
	}
	p.Stop(t)
	if p.Running() {
		t.Fatal("Running after Stop")
	}
	if out, err := psql(t.Context(), "SELECT 1"); err == nil {
		t.Fatalf("a query succeeded on the stopped server: %s", out)
	}
	p.Start(t)
	out, err := psql(t.Context(), "SELECT v FROM kept")
	if err != nil || out != "42" {
		t.Fatalf("after restart: %q, %v; want 42", out, err)
	}
	if st, err := os.Stat(p.DataDir); err != nil || !st.IsDir() {
		t.Fatalf("data dir %s: %v", p.DataDir, err)
	}
}
