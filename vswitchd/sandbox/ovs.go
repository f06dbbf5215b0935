package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// pollInterval is how often start-up waits look again.
const pollInterval = 100 * time.Millisecond

// run runs an OVS tool with the sandbox's environment until it exits or ctx ends, and returns
// its trimmed stdout. The error names the command line, wraps the cause (ctx's cause first) and
// quotes stderr.
func (s *Sandbox) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), s.env...)
	cmd.WaitDelay = 2 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
		}
		err = fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
	}
	return strings.TrimSpace(out.String()), err
}

// vsctl runs ovs-vsctl against the sandbox's database.
func (s *Sandbox) vsctl(ctx context.Context, args ...string) (string, error) {
	return s.run(ctx, "ovs-vsctl", append([]string{"--db=" + s.endpoint}, args...)...)
}

// appctl runs ovs-appctl against the daemon d.
func (s *Sandbox) appctl(ctx context.Context, d *daemon, args ...string) (string, error) {
	return s.run(ctx, "ovs-appctl", append([]string{"-t", d.ctl}, args...)...)
}

// ensureDB creates the database from the schema when it does not exist (atomically: created
// under a temporary name, then renamed), and converts an existing one whose schema is older
// than the installed one.
func (s *Sandbox) ensureDB(ctx context.Context) error {
	schema := s.opts.Paths.Schema
	if _, err := os.Stat(s.dbPath); err == nil {
		need, err := s.run(ctx, "ovsdb-tool", "needs-conversion", s.dbPath, schema)
		if err != nil {
			return fmt.Errorf("database %s: %w", s.dbPath, err)
		}
		if need == "yes" {
			s.log.Info("sandbox: converting the database to the installed schema", "db", s.dbPath, "schema", schema)
			if _, err := s.run(ctx, "ovsdb-tool", "convert", s.dbPath, schema); err != nil {
				return fmt.Errorf("database %s: %w", s.dbPath, err)
			}
		}
		return nil
	}
	tmp := s.dbPath + ".new"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("create database: %w", err)
	}
	if _, err := s.run(ctx, "ovsdb-tool", "create", tmp, schema); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	if err := os.Rename(tmp, s.dbPath); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	s.log.Info("sandbox: created the database", "db", s.dbPath, "schema", schema)
	return nil
}

// waitSocket polls until the database socket accepts connections or ctx ends.
func (s *Sandbox) waitSocket(ctx context.Context) error {
	return poll(ctx, func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", s.sock)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// waitApplied raises Open_vSwitch.next_cfg by one and waits until ovs-vswitchd acknowledges it
// in cur_cfg. (`ovs-vsctl init` would not do: ovs-vsctl waits only for transactions that change
// something.)
func (s *Sandbox) waitApplied(ctx context.Context) error {
	out, err := s.vsctl(ctx, "get", "Open_vSwitch", ".", "next_cfg")
	if err != nil {
		return err
	}
	next, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return fmt.Errorf("next_cfg %q: %w", out, err)
	}
	want := strconv.FormatInt(next+1, 10)
	if _, err := s.vsctl(ctx, "--no-wait", "set", "Open_vSwitch", ".", "next_cfg="+want); err != nil {
		return err
	}
	_, err = s.vsctl(ctx, "wait-until", "Open_vSwitch", ".", "cur_cfg>="+want)
	return err
}

// poll calls cond every pollInterval until it returns nil or ctx ends; then it returns ctx's
// cause with cond's last error.
func poll(ctx context.Context, cond func(ctx context.Context) error) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last try: %w)", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}
