package unixctltest_test

import (
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/internal/ovsproc/unixctltest"
)

// TestStockFake: through ovsproc's client, the stock fake lists Debian's 3.1 commands without
// the vhost async ones, refuses them as OVS refuses an unknown command, answers version and
// coverage/show, refuses pmd-rxq-show without a datapath, and is found by VswitchdCtl.
func TestStockFake(t *testing.T) {
	s := unixctltest.Start(t, unixctltest.Options{})
	ctx := t.Context()
	if ctl, err := ovsproc.VswitchdCtl(s.RunDir); err != nil || ctl != s.Path {
		t.Errorf("VswitchdCtl = %q, %v; want %q", ctl, err, s.Path)
	}
	cmds, err := ovsproc.AppctlCommands(ctx, s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 100 || !slices.Contains(cmds, "dpif-netdev/pmd-rxq-show") || !slices.Contains(cmds, "netdev-dpdk/get-mempool-info") {
		t.Errorf("%d commands: %q", len(cmds), cmds)
	}
	if slices.Contains(cmds, unixctltest.SetThreshCommand) || slices.Contains(cmds, unixctltest.GetThreshCommand) {
		t.Errorf("the stock fake offers vhost async commands")
	}
	var ue *ovsproc.UnixctlError
	if _, err := ovsproc.Unixctl(ctx, s.Path, unixctltest.SetThreshCommand, "256"); !errors.As(err, &ue) ||
		ue.Message != `"netdev-dpdk/set-vhost-async-thresh" is not a valid command (use "list-commands" to see a list of valid commands)` {
		t.Errorf("set-vhost-async-thresh on the stock fake: %v", err)
	}
	if v, err := ovsproc.Unixctl(ctx, s.Path, "version"); err != nil || v != "ovs-vswitchd (Open vSwitch) 3.1.0\n" {
		t.Errorf("version = %q, %v", v, err)
	}
	if c, err := ovsproc.Unixctl(ctx, s.Path, "coverage/show"); err != nil || c != unixctltest.StockCoverage() || !strings.HasPrefix(c, "Event coverage") {
		t.Errorf("coverage/show = %.60q, %v", c, err)
	}
	if _, err := ovsproc.PMDRxqShow(ctx, s.Path); !errors.Is(err, ovsproc.ErrNoDatapath) {
		t.Errorf("pmd-rxq-show without a datapath: %v", err)
	}
	s.SetPMDRxqShow(unixctltest.StockPMDRxqShow())
	pmds, err := ovsproc.PMDRxqShow(ctx, s.Path)
	if err != nil || len(pmds) != 1 || pmds[0].Core != 1 || len(pmds[0].Rxqs) != 2 || pmds[0].Rxqs[1].Port != "vhu1" {
		t.Errorf("pmd-rxq-show = %+v, %v", pmds, err)
	}
	if _, err := ovsproc.Unixctl(ctx, s.Path, "list-commands", "x"); !errors.As(err, &ue) || ue.Message != `"list-commands" command takes at most 0 arguments` {
		t.Errorf("list-commands x: %v", err)
	}
	calls := s.Calls()
	if len(calls) != 7 || calls[1].Method != unixctltest.SetThreshCommand || !slices.Equal(calls[1].Params, []string{"256"}) {
		t.Errorf("calls = %+v", calls)
	}
}

// TestCapableFake: the capable fake lists the vhost async commands in OVS's sorted order,
// records the threshold set through them, reads it back, and refuses a bad one.
func TestCapableFake(t *testing.T) {
	s := unixctltest.Start(t, unixctltest.Options{VhostAsync: true, PMDRxqShow: "Displaying last 60 seconds pmd usage %\n"})
	ctx := t.Context()
	cmds, err := ovsproc.AppctlCommands(ctx, s.Path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := slices.Index(cmds, unixctltest.GetThreshCommand), slices.Index(cmds, unixctltest.SetThreshCommand)
	if i < 0 || j < i || !slices.IsSorted(cmds) {
		t.Errorf("commands: get at %d, set at %d, sorted %v", i, j, slices.IsSorted(cmds))
	}
	stock, _ := ovsproc.ParseCommandList(unixctltest.StockCommandList())
	if len(cmds) != len(stock)+2 {
		t.Errorf("%d commands, want the %d stock ones and two more", len(cmds), len(stock))
	}
	if v, ok := s.Thresh(); v != unixctltest.DefaultThresh || ok {
		t.Errorf("Thresh before = %d, %v", v, ok)
	}
	if _, err := ovsproc.Unixctl(ctx, s.Path, unixctltest.SetThreshCommand, "256"); err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Thresh(); v != 256 || !ok {
		t.Errorf("Thresh after = %d, %v", v, ok)
	}
	if got, err := ovsproc.Unixctl(ctx, s.Path, unixctltest.GetThreshCommand); err != nil || got != "256\n" {
		t.Errorf("get = %q, %v", got, err)
	}
	var ue *ovsproc.UnixctlError
	for _, args := range [][]string{{"-1"}, {"x"}, {}, {"1", "2"}} {
		if _, err := ovsproc.Unixctl(ctx, s.Path, unixctltest.SetThreshCommand, args...); !errors.As(err, &ue) {
			t.Errorf("set %q: %v", args, err)
		}
	}
	if v, _ := s.Thresh(); v != 256 {
		t.Errorf("a refused set changed the threshold to %d", v)
	}
	if pmds, err := ovsproc.PMDRxqShow(ctx, s.Path); err != nil || len(pmds) != 0 {
		t.Errorf("pmd-rxq-show of a bridge without ports = %+v, %v", pmds, err)
	}
}

// TestFakeSpeaksJSONRPCStream: like ovs-vswitchd, the fake answers several requests on one
// connection, echoes each id, and refuses a non-string argument.
func TestFakeSpeaksJSONRPCStream(t *testing.T) {
	s := unixctltest.Start(t, unixctltest.Options{})
	c, err := net.Dial("unix", s.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(`{"method":"version","params":[],"id":7}{"method":"version","params":[1],"id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(c)
	var reps [2]struct {
		ID     any
		Result *string
		Error  *string
	}
	for i := range reps {
		if err := dec.Decode(&reps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if reps[0].ID != float64(7) || reps[0].Result == nil || reps[0].Error != nil {
		t.Errorf("first reply %+v", reps[0])
	}
	if reps[1].ID != "x" || reps[1].Result != nil || reps[1].Error == nil || *reps[1].Error != "command has non-string argument: 1" {
		t.Errorf("second reply %+v", reps[1])
	}
	s.Close()
	if _, err := ovsproc.Unixctl(t.Context(), s.Path, "version"); err == nil {
		t.Error("a closed fake still answers")
	}
}
