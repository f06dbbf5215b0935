package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

// TestPluginDevLoop runs the development loop of `make plugin-dev PLUGIN=examples/plugin-sample`
// (scripts/plugin-dev.sh, then ovsplaned as `make run` starts it), with a configuration port of
// the template's type: the real daemon starts the built plugin, attaches the port through it and
// writes it, on the embedded database and, as root, on a private real Open vSwitch (--sandbox,
// userspace datapath). `--once` makes the daemon exit 0 only when every object is ready.
func TestPluginDevLoop(t *testing.T) {
	dir, err := os.MkdirTemp("", "pdev") // short: the sandbox's socket paths must fit 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	out, err := exec.Command("../scripts/plugin-dev.sh", "plugin-sample", dir, "sample").Output()
	if err != nil {
		t.Fatalf("plugin-dev.sh: %v", err)
	}
	cfg := strings.TrimSpace(string(out))
	if data, err := os.ReadFile(cfg); err != nil || !strings.Contains(string(data), "name: sample") {
		t.Fatalf("configuration %s: %v\n%s", cfg, err, data)
	}
	daemon := filepath.Join(dir, "ovsplaned")
	if out, err := exec.Command("go", "build", "-o", daemon, "../cmd/ovsplaned").CombinedOutput(); err != nil {
		t.Fatalf("go build ovsplaned: %v\n%s", err, out)
	}
	ready := regexp.MustCompile(`(?m)^port/dev0\s+ready\b`)
	for _, mode := range []string{"--embedded", "--sandbox"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--config", cfg, mode, "--data-dir", filepath.Join(dir, mode[2:5]), "--once", "--timeout", "60s"}
			if mode == "--sandbox" {
				lab.Require(t, lab.NeedRoot, lab.NeedOVS)
				args = append(args, "--sandbox-dpdk", "off")
			}
			out, err := exec.Command(daemon, args...).CombinedOutput()
			if err != nil || !ready.Match(out) {
				t.Fatalf("ovsplaned %s: %v, want port/dev0 ready:\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}
