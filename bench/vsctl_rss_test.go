//go:build linux

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Peak RSS of one invocation cannot be read from the benchmark's own exec.Cmd: Go starts
// children with clone(CLONE_VM|CLONE_VFORK), and on execve Linux folds the high-water RSS of the
// memory the child leaves — the benchmark process's own, tens of MiB — into the child's
// ru_maxrss, which therefore never falls below the benchmark's RSS (both tools came out equal,
// and growing with the benchmark, in the first runs). So RSS is measured through a tiny
// launcher: the child's ru_maxrss (exec.Cmd.ProcessState.SysUsage) is then floored only by
// the launcher's own ≈2.3 MiB. The launcher's source is below; vsctlTools builds it.

// rssLauncherSource is `launcher OUT PROGRAM ARGS…`: it runs PROGRAM with the launcher's stdio,
// writes the child's peak RSS in KiB to the file OUT and exits with the child's status.
const rssLauncherSource = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "rss launcher:", err)
		os.Exit(127)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "rss launcher: no rusage")
		os.Exit(127)
	}
	if err := os.WriteFile(os.Args[1], []byte(fmt.Sprint(ru.Maxrss)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rss launcher:", err)
		os.Exit(127)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
`

// buildRSSLauncher builds the launcher into b's temporary directory and returns its path.
func buildRSSLauncher(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, text := range map[string]string{"main.go": rssLauncherSource, "go.mod": "module rsslauncher\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "rsslauncher")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the RSS launcher: %v\n%s", err, out)
	}
	return bin
}
