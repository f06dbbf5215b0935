package sandbox

import (
	"context"
	"fmt"
	"os"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// run runs an OVS tool with the sandbox's environment until it exits or ctx ends, and returns
// its trimmed stdout (see ovsproc.Run for the error).
func (s *Sandbox) run(ctx context.Context, name string, args ...string) (string, error) {
	out, _, err := ovsproc.Run(ctx, s.env, name, args...)
	return out, err
}

// vsctl runs ovs-vsctl against the sandbox's database and returns its trimmed stdout.
func (s *Sandbox) vsctl(ctx context.Context, args ...string) (string, error) {
	out, _, err := s.tools.Vsctl(ctx, args...)
	return out, err
}

// appctl runs ovs-appctl against the daemon d and returns its trimmed stdout.
func (s *Sandbox) appctl(ctx context.Context, d *ovsproc.Daemon, args ...string) (string, error) {
	out, _, err := s.tools.Appctl(ctx, d.Spec().Ctl, args...)
	return out, err
}

// ensureDB creates the database from the schema when it does not exist (atomically: created
// under a temporary name, then renamed), and converts an existing one whose schema is older
// than the installed one.
func (s *Sandbox) ensureDB(ctx context.Context) error {
	schema, dbPath := s.opts.Paths.Schema, s.layout.DBPath()
	if _, err := os.Stat(dbPath); err == nil {
		need, err := s.run(ctx, "ovsdb-tool", "needs-conversion", dbPath, schema)
		if err != nil {
			return fmt.Errorf("database %s: %w", dbPath, err)
		}
		if need == "yes" {
			s.log.Info("sandbox: converting the database to the installed schema", "db", dbPath, "schema", schema)
			if _, err := s.run(ctx, "ovsdb-tool", "convert", dbPath, schema); err != nil {
				return fmt.Errorf("database %s: %w", dbPath, err)
			}
		}
		return nil
	}
	tmp := dbPath + ".new"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("create database: %w", err)
	}
	if _, err := s.run(ctx, "ovsdb-tool", "create", tmp, schema); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	if err := os.Rename(tmp, dbPath); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	s.log.Info("sandbox: created the database", "db", dbPath, "schema", schema)
	return nil
}
