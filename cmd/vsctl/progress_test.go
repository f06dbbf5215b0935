package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// serveFake runs the API server over a fake backend whose ApplyPort takes delay, and returns
// the fake and the socket's address.
func serveFake(t *testing.T, delay time.Duration) (*apitest.Fake, string) {
	t.Helper()
	addr := "unix:" + filepath.Join(testkit.ShortTempDir(t, "ovsplane-vsctl"), "ovsplaned.sock")
	fake := apitest.New()
	fake.SetApplyDelay(delay)
	listening := make(chan struct{})
	srv := apiserver.New(fake, apiserver.Options{OnListen: func(string) { close(listening) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, config.API{Listen: []string{addr}}) }()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return fake, addr
}

// applyFile writes an apply file of one bridge with n internal ports.
func applyFile(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("bridges:\n  - name: br0\n    datapath_type: netdev\n    ports:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - name: p%d\n        interfaces:\n          - name: p%d\n            type: internal\n", i, i)
	}
	p := filepath.Join(t.TempDir(), "desired.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// openPTY opens a pseudo-terminal pair: the controlling side (read it) and the terminal side
// (give it to the child).
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("the pty's number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// `vsctl apply` draws a progress bar on stderr only when stderr is a terminal: on a pipe (or
// /dev/null, a character device but no terminal) stderr stays empty; on a pty the bar is drawn
// and erased, and stdout has the same summary either way.
func TestApplyProgressBarOnlyOnATerminal(t *testing.T) {
	bin := buildVsctl(t)
	_, addr := serveFake(t, 5*time.Millisecond)
	file := applyFile(t, 200)
	summary := "applied 1 bridge(s) and 200 port(s) in "

	t.Run("pipe", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(t.Context(), bin, "--daemon="+addr, "--jobs=4", "apply", "-f", file)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("vsctl apply: %v\n%s", err, stderr.String())
		}
		if !strings.Contains(stdout.String(), summary) || !strings.Contains(stdout.String(), "200 ready, 0 pending, 0 failed") {
			t.Errorf("summary: %q", stdout.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("stderr on a pipe has %q, want nothing", stderr.String())
		}
	})

	t.Run("pty", func(t *testing.T) {
		ptmx, tty := openPTY(t)
		var stdout bytes.Buffer
		cmd := exec.CommandContext(t.Context(), bin, "--daemon="+addr, "--jobs=4", "apply", "-f", file)
		cmd.Stdout, cmd.Stderr = &stdout, tty
		read := make(chan []byte, 1)
		go func() {
			// Read until the child and this test have closed the terminal side (EIO).
			b, _ := io.ReadAll(ptmx)
			read <- b
		}()
		err := cmd.Run()
		tty.Close()
		drawn := string(<-read)
		if err != nil {
			t.Fatalf("vsctl apply: %v\n%q", err, drawn)
		}
		if !strings.Contains(stdout.String(), summary) {
			t.Errorf("summary: %q", stdout.String())
		}
		last := strings.LastIndex(drawn, "\rports ")
		if last < 0 || !strings.Contains(drawn, "/200, ") {
			t.Fatalf("no progress bar on the terminal: %q", drawn)
		}
		if !strings.HasSuffix(strings.TrimRight(drawn[last+1:], " \r"), "]") || !strings.HasSuffix(drawn, " \r") {
			t.Errorf("the bar is not erased at the end: %q", drawn[last:])
		}
	})
}
