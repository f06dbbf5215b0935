//go:build linux

package ovsproc_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestAppctlCommandsOfRealVswitchd: against a real ovs-vswitchd (dummy datapath), VswitchdCtl
// finds its unixctl socket from the run directory, AppctlCommands lists exactly the commands
// `ovs-appctl list-commands` prints (the userspace datapath's dpif-netdev/pmd-rxq-show and the
// dummy netdev's commands among them), version answers, and an unknown command or a bad
// argument is a *UnixctlError (the daemon quotes the argument as it was sent).
func TestAppctlCommandsOfRealVswitchd(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ctx := t.Context()

	ctl, err := ovsproc.VswitchdCtl(db.Dir)
	if err != nil || ctl != sw.CtlPath {
		t.Fatalf("VswitchdCtl(%s) = %q, %v; want %q", db.Dir, ctl, err, sw.CtlPath)
	}
	cmds, err := ovsproc.AppctlCommands(ctx, ctl)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, l := range strings.Split(sw.Appctl(t, "list-commands"), "\n") {
		if f := strings.Fields(l); i > 0 && len(f) > 0 {
			want = append(want, f[0])
		}
	}
	if !slices.Equal(cmds, want) {
		t.Errorf("AppctlCommands = %q\novs-appctl list-commands = %q", cmds, want)
	}
	for _, c := range []string{"list-commands", "version", "dpif-netdev/pmd-rxq-show", "netdev-dummy/receive"} {
		if !slices.Contains(cmds, c) {
			t.Errorf("%s missing from %d commands", c, len(cmds))
		}
	}
	t.Logf("%d commands (timing: BenchmarkAppctlListCommands in bench/)", len(cmds))

	if v, err := ovsproc.Unixctl(ctx, ctl, "version"); err != nil || !strings.HasPrefix(v, "ovs-vswitchd (Open vSwitch) ") {
		t.Errorf("version = %q, %v", v, err)
	}
	var ue *ovsproc.UnixctlError
	if _, err := ovsproc.Unixctl(ctx, ctl, "no-such/command"); !errors.As(err, &ue) || !strings.Contains(ue.Message, "not a valid command") {
		t.Errorf("an unknown command: %v", err)
	}
	// vlog/set quotes the first word of its argument back: the argument arrived as one
	// string, never split or interpreted by a shell.
	evil := "br0;$(id) rm \"x\""
	if _, err := ovsproc.Unixctl(ctx, ctl, "vlog/set", evil); !errors.As(err, &ue) || !strings.Contains(ue.Message, `"br0;$(id)"`) {
		t.Errorf("a bad argument: %v", err)
	}
	if _, err := ovsproc.VswitchdCtl(t.TempDir()); err == nil || !strings.Contains(err.Error(), "ovs-vswitchd.ctl") {
		t.Errorf("VswitchdCtl of an empty dir: %v", err)
	}
}

// TestAppctlCommandsOfDPDKVswitchd: the DPDK build's command set, read over unixctl, has
// DPDK's own commands and the userspace datapath's next to the common ones, the way a plugin
// tells a DPDK switch from its facts.
func TestAppctlCommandsOfDPDKVswitchd(t *testing.T) {
	lab.Require(t, lab.NeedDPDK)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK})
	ctl, err := ovsproc.VswitchdCtl(db.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := ovsproc.AppctlCommands(t.Context(), ctl)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"list-commands", "version", "dpif-netdev/pmd-rxq-show", "netdev-dpdk/get-mempool-info"} {
		if !slices.Contains(cmds, c) {
			t.Errorf("%s missing from %d commands", c, len(cmds))
		}
	}
	var dpdk []string
	for _, c := range cmds {
		if strings.HasPrefix(c, "netdev-dpdk/") || strings.HasPrefix(c, "dpdk/") {
			dpdk = append(dpdk, c)
		}
	}
	t.Logf("%d commands, DPDK's: %q", len(cmds), dpdk)
}
