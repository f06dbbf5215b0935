package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/cli"
	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
)

// vsctl --help prints ovs-vsctl 3.1's help byte for byte (cli.Usage, itself compared with the
// real ovs-vsctl's in internal/cli), then, after an empty line, ovsplane's own commands.
func TestHelpListsOwnCommandsAfterOvsVsctls(t *testing.T) {
	bin := buildVsctl(t)
	for _, flag := range []string{"--help", "-h"} {
		cmd := exec.Command(bin, flag)
		cmd.Env = append(os.Environ(), "OVS_RUNDIR=/run/x", "OVS_LOGDIR=/log/y")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("vsctl %s: %v", flag, err)
		}
		ovs := cli.Usage("vsctl", "unix:/run/x/db.sock", "/log/y/vsctl.log")
		own := daemoncmd.Usage("vsctl")
		if want := ovs + "\n" + own; string(out) != want {
			t.Fatalf("vsctl %s printed:\n%s\nwant ovs-vsctl's help, an empty line and:\n%s", flag, out, own)
		}
		for _, c := range []string{"status", "apply", "plugin"} {
			if !strings.Contains(own, "vsctl [OPTIONS] "+c) {
				t.Errorf("the help of vsctl's own commands does not list %s:\n%s", c, own)
			}
		}
	}
}
