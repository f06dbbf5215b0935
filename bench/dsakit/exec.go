package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// execRunner runs the steps on this machine.
type execRunner struct{}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	buf bytes.Buffer
	max int
}

// Write keeps what fits and reports every byte written, so a child never blocks on the pipe.
func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// command builds the exec.Cmd of s: no shell, killed when ctx ends, output capped.
func command(ctx context.Context, s step) (*exec.Cmd, *capped, *capped, error) {
	if len(s.Argv) == 0 {
		return nil, nil, nil, errors.New("no command")
	}
	cmd := exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
	cmd.WaitDelay = 2 * time.Second
	stdout, stderr := &capped{max: maxToolOutput}, &capped{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd, stdout, stderr, nil
}

// describe wraps a failed command's error with its stderr's last line.
func describe(s step, err error, stderr *capped) error {
	msg := strings.TrimSpace(stderr.buf.String())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	if msg != "" {
		return fmt.Errorf("%s: %w: %s", s.Argv[0], err, msg)
	}
	return fmt.Errorf("%s: %w", s.Argv[0], err)
}

// Run implements executor.
func (execRunner) Run(ctx context.Context, s step, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, stdout, stderr, err := command(ctx, s)
	if err != nil {
		return "", err
	}
	if err := cmd.Run(); err != nil {
		return stdout.buf.String(), describe(s, err, stderr)
	}
	return stdout.buf.String(), nil
}

// Start implements executor.
func (execRunner) Start(ctx context.Context, s step, timeout time.Duration) (func() error, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	cmd, _, stderr, err := command(ctx, s)
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, describe(s, err, stderr)
	}
	return func() error {
		defer cancel()
		if err := cmd.Wait(); err != nil {
			return describe(s, err, stderr)
		}
		return nil
	}, nil
}

// Sleep implements executor.
func (execRunner) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// Now implements executor.
func (execRunner) Now() time.Time { return time.Now() }

// ListDir implements executor.
func (execRunner) ListDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// dryRunner runs nothing: commands answer with the recorded outputs in dir/<mode>/<sample>
// (empty output for steps whose output is not parsed), Sleep advances a fake clock, and the
// work queue directory holds the work queues listed in assumedWQs.
type dryRunner struct {
	dir   string
	clock time.Time
}

// assumedWQs are the work queues a dry run pretends DevDSA holds.
func assumedWQs() []string { return []string{"wq0.0", "wq0.1", "wq2.0", "wq2.1"} }

// Run implements executor.
func (d *dryRunner) Run(_ context.Context, s step, _ time.Duration) (string, error) {
	if s.Sample == "" {
		return "", nil
	}
	b, err := os.ReadFile(filepath.Join(d.dir, string(s.Mode), s.Sample))
	if err != nil {
		return "", fmt.Errorf("dry run: recorded output: %w", err)
	}
	if len(b) > maxToolOutput {
		return "", fmt.Errorf("dry run: recorded output %s/%s: %d bytes, at most %d", s.Mode, s.Sample, len(b), maxToolOutput)
	}
	return string(b), nil
}

// Start implements executor.
func (d *dryRunner) Start(context.Context, step, time.Duration) (func() error, error) {
	return func() error { return nil }, nil
}

// Sleep implements executor.
func (d *dryRunner) Sleep(_ context.Context, dur time.Duration) error {
	d.clock = d.clock.Add(dur)
	return nil
}

// Now implements executor.
func (d *dryRunner) Now() time.Time { return d.clock }

// ListDir implements executor.
func (d *dryRunner) ListDir(string) ([]string, error) { return assumedWQs(), nil }
