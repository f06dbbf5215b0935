package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
	"github.com/ovsplane/ovsplane/vswitchd/vswitchdtest"
)

const deadline = 60 * time.Second

// env is the reconciler tests' OVSDB: in memory, with a simulated ovs-vswitchd.
type env struct{ *vswitchdtest.Env }

func newEnv(t *testing.T) *env { return &env{vswitchdtest.NewEnv(t, 3*time.Minute)} }

// client returns a client on the server tagging rows with owner.
func (e *env) client(t *testing.T, owner string, attach bool) *ovsdb.Client {
	t.Helper()
	return e.Client(t, ovsdb.Config{Owner: owner, AttachToForeignBridges: attach})
}

// foreignBr9 has another owner, "someone-else", create the netdev bridge br9 with a port of
// each name in ports, and returns that owner's client.
func foreignBr9(t *testing.T, e *env, ports ...string) *ovsdb.Client {
	t.Helper()
	other := e.client(t, "someone-else", true)
	txn := other.NewTxn(1).EnsureBridge(model.Bridge{Name: "br9", DatapathType: "netdev"}, nil)
	for _, p := range ports {
		txn = txn.EnsurePort(ovsdb.PortOn{Bridge: "br9", Port: model.Port{Name: p}})
	}
	if _, err := txn.Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	return other
}

// start runs a Reconciler in the background until the test ends.
func start(t *testing.T, e *env, c reconcile.Client, d config.DesiredState) (*reconcile.Reconciler, *testkit.LogBuffer) {
	t.Helper()
	logs := &testkit.LogBuffer{}
	r := reconcile.New(c, d, reconcile.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Commit: ovsdb.CommitOptions{ApplyTimeout: 30 * time.Second}, MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 500 * time.Millisecond})
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
	return r, logs
}

// dump renders the database: per bridge, its ports (with tag and owner) and their interfaces
// (with options), sorted.
func dump(ctx context.Context, raw client.Client) (string, error) {
	var bridges []vswitch.Bridge
	var ports []vswitch.Port
	var ifaces []vswitch.Interface
	if err := raw.List(ctx, &bridges); err != nil {
		return "", err
	}
	if err := raw.List(ctx, &ports); err != nil {
		return "", err
	}
	if err := raw.List(ctx, &ifaces); err != nil {
		return "", err
	}
	pm := map[string]vswitch.Port{}
	for _, p := range ports {
		pm[p.UUID] = p
	}
	im := map[string]vswitch.Interface{}
	for _, i := range ifaces {
		im[i.UUID] = i
	}
	var lines []string
	for _, b := range bridges {
		var ps []string
		for _, pu := range b.Ports {
			p := pm[pu]
			s := p.Name
			if p.Tag != nil {
				s += fmt.Sprintf(" tag=%d", *p.Tag)
			}
			s += " owner=" + p.ExternalIDs[ovsdb.OwnerKey]
			var is []string
			for _, iu := range p.Interfaces {
				i := im[iu]
				x := i.Name
				if len(i.Options) > 0 {
					x += fmt.Sprint(i.Options)
				}
				is = append(is, x)
			}
			slices.Sort(is)
			ps = append(ps, s+" ["+strings.Join(is, " ")+"]")
		}
		slices.Sort(ps)
		lines = append(lines, b.Name+" owner="+b.ExternalIDs[ovsdb.OwnerKey]+": "+strings.Join(ps, "; "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

// eventually waits until cond returns nil, failing after a generous deadline.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	testkit.Eventually(t, deadline, 20*time.Millisecond, func() error {
		if err := cond(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

func waitDump(t *testing.T, e *env, want string) {
	t.Helper()
	want = strings.TrimSpace(want)
	eventually(t, "database contents", func() error {
		got, err := dump(e.Ctx, e.Raw)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("got\n%s\nwant\n%s", got, want)
		}
		return nil
	})
}

func statusOf(r *reconcile.Reconciler, key string) (model.Status, bool) {
	for _, s := range r.Status() {
		if s.Key() == key {
			return s, true
		}
	}
	return model.Status{}, false
}

func waitState(t *testing.T, r *reconcile.Reconciler, key string, st model.State) model.Status {
	t.Helper()
	var got model.Status
	eventually(t, key+" "+string(st), func() error {
		ch := r.Watch()
		s, ok := statusOf(r, key)
		if ok && s.State == st {
			got = s
			return nil
		}
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
		}
		return fmt.Errorf("status %+v (found %v)", s, ok)
	})
	return got
}

func intp(i int) *int { return &i }

func tapPort(name string, tag *int) model.Port {
	return model.Port{Name: name, Tag: tag, Interfaces: []model.Interface{{Name: name, Type: "dpdk",
		Options: map[string]string{"dpdk-devargs": "net_tap_" + name}}}}
}

func desired(bridges ...model.Bridge) config.DesiredState {
	c := config.Config{Bridges: bridges}
	return c.Desired()
}

func TestConvergeAndChange(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	d := desired(model.Bridge{Name: "br0", DatapathType: "netdev",
		Ports: []model.Port{tapPort("p1", nil), tapPort("p2", intp(10))}},
		model.Bridge{Name: "br1", DatapathType: "netdev", Ports: []model.Port{tapPort("q1", nil)}})
	r, _ := start(t, e, c, d)
	waitDump(t, e, `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p1 owner=ovsplane [p1map[dpdk-devargs:net_tap_p1]]; p2 tag=10 owner=ovsplane [p2map[dpdk-devargs:net_tap_p2]]
br1 owner=ovsplane: br1 owner=ovsplane [br1]; q1 owner=ovsplane [q1map[dpdk-devargs:net_tap_q1]]`)
	for _, k := range []string{"interface/p1", "interface/p2", "interface/q1", "port/p1", "bridge/br0", "bridge/br1"} {
		waitState(t, r, k, model.StateReady)
	}
	if s := waitState(t, r, "interface/p1", model.StateReady); s.Ofport <= 0 {
		t.Errorf("p1 ready without ofport: %+v", s)
	}

	// Remove p1, add p3, change p2's tag and options, remove br1.
	p2 := tapPort("p2", intp(20))
	p2.Interfaces[0].Options["n_rxq"] = "2"
	r.Update(desired(model.Bridge{Name: "br0", DatapathType: "netdev",
		Ports: []model.Port{p2, tapPort("p3", nil)}}))
	waitDump(t, e, `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p2 tag=20 owner=ovsplane [p2map[dpdk-devargs:net_tap_p2 n_rxq:2]]; p3 owner=ovsplane [p3map[dpdk-devargs:net_tap_p3]]`)
	waitState(t, r, "interface/p3", model.StateReady)
	eventually(t, "statuses of removed objects gone", func() error {
		for _, k := range []string{"interface/p1", "port/p1", "bridge/br1", "interface/q1"} {
			if s, ok := statusOf(r, k); ok {
				return fmt.Errorf("still reported: %+v", s)
			}
		}
		return nil
	})
}

func TestForeignRowsUntouched(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	// A foreign bridge with a port named like ours, and a foreign port on our bridge (once it exists).
	other := foreignBr9(t, e, "p9")
	r, _ := start(t, e, c, desired(model.Bridge{Name: "br0", DatapathType: "netdev",
		Ports: []model.Port{tapPort("p1", nil)}}))
	waitState(t, r, "interface/p1", model.StateReady)
	if _, err := other.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p2"}}).
		Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// Our desired state drops p1: p2 (foreign, on our bridge) and br9/p9 stay.
	r.Update(desired(model.Bridge{Name: "br0", DatapathType: "netdev"}))
	waitDump(t, e, `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p2 owner=someone-else [p2]
br9 owner=someone-else: br9 owner=someone-else [br9]; p9 owner=someone-else [p9]`)
	// Asking for a name a foreign row holds fails the pass and changes nothing.
	r.Update(desired(model.Bridge{Name: "br0", DatapathType: "netdev", Ports: []model.Port{tapPort("p9", nil)}}))
	s := waitState(t, r, "port/p9", model.StateError)
	if !strings.Contains(s.Error, ovsdb.ErrNotOwned.Error()) {
		t.Errorf("p9 error %q does not say %q", s.Error, ovsdb.ErrNotOwned)
	}
	waitDump(t, e, `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p2 owner=someone-else [p2]
br9 owner=someone-else: br9 owner=someone-else [br9]; p9 owner=someone-else [p9]`)
}

func TestDriftRepaired(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	r, logs := start(t, e, c, desired(model.Bridge{Name: "br0", DatapathType: "netdev",
		Ports: []model.Port{tapPort("p1", intp(5)), tapPort("p2", nil)}}))
	want := `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p1 tag=5 owner=ovsplane [p1map[dpdk-devargs:net_tap_p1]]; p2 owner=ovsplane [p2map[dpdk-devargs:net_tap_p2]]`
	waitDump(t, e, want)
	waitState(t, r, "interface/p2", model.StateReady)

	// Someone with our owner tag (another process, an operator) deletes p2 behind our back.
	vandal := e.client(t, "", false)
	if _, err := vandal.NewTxn(99).DeletePort("br0", "p2").Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDump(t, e, want)
	eventually(t, "repair logged", func() error {
		if l := logs.String(); !strings.Contains(l, "repaired drift") || !strings.Contains(l, "port/p2") {
			return fmt.Errorf("logs:\n%s", l)
		}
		return nil
	})
	// And edits p1's tag.
	if _, err := vandal.NewTxn(99).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Tag: intp(7),
		Interfaces: []model.Interface{{Name: "p1", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "net_tap_p1"}}}}}).
		Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDump(t, e, want)
	waitState(t, r, "interface/p2", model.StateReady)
}

// busyWriter is a Writer that is always busy: every look for drift (Pass without waiting)
// gives way, every waiting pass runs. It counts both.
type busyWriter struct{ declined, ran atomic.Int32 }

func (w *busyWriter) Pass(ctx context.Context, wait bool, pass func(context.Context) error) (bool, error) {
	if !wait {
		w.declined.Add(1)
		return false, nil
	}
	w.ran.Add(1)
	return true, pass(ctx)
}

// A writer that stays busy delays the look for drift, but not past MaxDriftDelay: the look
// then waits for the writer and repairs. Resync is off, so nothing else would. MaxDriftDelay is
// a hundred DriftDelays: on a loaded machine the first 20 ms look can fire late, and one that
// fired past MaxDriftDelay would wait at once instead of giving way (seen with 300 ms).
func TestDriftRepairedWhileTheWriterStaysBusy(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	w := &busyWriter{}
	r := reconcile.New(c, desired(model.Bridge{Name: "br0", DatapathType: "netdev",
		Ports: []model.Port{tapPort("p1", nil), tapPort("p2", nil)}}), reconcile.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Commit: ovsdb.CommitOptions{ApplyTimeout: 30 * time.Second},
		Resync: -1, DriftDelay: 20 * time.Millisecond, MaxDriftDelay: 2 * time.Second, Writer: w})
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	want := `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p1 owner=ovsplane [p1map[dpdk-devargs:net_tap_p1]]; p2 owner=ovsplane [p2map[dpdk-devargs:net_tap_p2]]`
	waitDump(t, e, want)
	vandal := e.client(t, "", false)
	if _, err := vandal.NewTxn(99).DeletePort("br0", "p2").Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// The repair needs a waiting pass after the delete: one that began before it could not
	// have made it.
	declined, ran := w.declined.Load(), w.ran.Load()
	want = strings.TrimSpace(want)
	eventually(t, "p2 repaired by a waiting pass", func() error {
		got, err := dump(e.Ctx, e.Raw)
		if err != nil {
			return err
		}
		if got != want || w.ran.Load() == ran {
			return fmt.Errorf("%d waiting passes since the delete; database:\n%s", w.ran.Load()-ran, got)
		}
		return nil
	})
	if w.declined.Load() == declined {
		t.Fatalf("no look for drift gave way to the busy writer after the delete")
	}
}

func TestInterfaceErrorStatus(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	bad := model.Port{Name: "bad0", Interfaces: []model.Interface{{Name: "bad0", Type: "dpdk",
		Options: map[string]string{"dpdk-devargs": "0000:99:00.0"}}}}
	r, _ := start(t, e, c, desired(model.Bridge{Name: "br0", DatapathType: "netdev",
		Ports: []model.Port{bad, tapPort("p1", nil)}}))
	s := waitState(t, r, "interface/bad0", model.StateError)
	if !strings.Contains(s.Error, "Error attaching device") {
		t.Errorf("bad0 error %q lacks ovs-vswitchd's message", s.Error)
	}
	if ps := waitState(t, r, "port/bad0", model.StateError); ps.Error != s.Error {
		t.Errorf("port error %q, interface error %q", ps.Error, s.Error)
	}
	waitState(t, r, "interface/p1", model.StateReady)
	waitState(t, r, "port/p1", model.StateReady)
	waitState(t, r, "bridge/br0", model.StateReady)
}

func TestRestartPrunesOnlyOwnStaleRows(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, "", false)
	other := e.client(t, "someone-else", true)
	d := config.Config{OtherConfig: map[string]string{"pmd-cpu-mask": "0x6", "dpdk-socket-mem": "1024"},
		Bridges: []model.Bridge{
			{Name: "br0", DatapathType: "netdev", Ports: []model.Port{tapPort("p1", nil), tapPort("p2", nil)}},
			{Name: "br1", DatapathType: "netdev", Ports: []model.Port{tapPort("q1", nil)}}}}
	first := reconcile.New(c, d.Desired(), reconcile.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := first.Reconcile(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p3"}}).
		SetGlobal(map[string]string{"hw-offload": "false"}).Commit(e.Ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// The daemon restarts with a new client and a smaller desired state.
	c2 := e.client(t, "", false)
	small := config.Config{OtherConfig: map[string]string{"pmd-cpu-mask": "0x6"},
		Bridges: []model.Bridge{{Name: "br0", DatapathType: "netdev", Ports: []model.Port{tapPort("p1", nil)}}}}
	second := reconcile.New(c2, small.Desired(), reconcile.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := second.Reconcile(e.Ctx); err != nil {
		t.Fatal(err)
	}
	waitDump(t, e, `
br0 owner=ovsplane: br0 owner=ovsplane [br0]; p1 owner=ovsplane [p1map[dpdk-devargs:net_tap_p1]]; p3 owner=someone-else [p3]`)
	var ovs []vswitch.OpenvSwitch
	if err := e.Raw.List(e.Ctx, &ovs); err != nil || len(ovs) != 1 {
		t.Fatalf("Open_vSwitch: %v %v", ovs, err)
	}
	oc := ovs[0].OtherConfig
	if oc["pmd-cpu-mask"] != "0x6" || oc["hw-offload"] != "false" || oc["dpdk-socket-mem"] != "" {
		t.Errorf("other_config %v: want pmd-cpu-mask kept, hw-offload (foreign) kept, dpdk-socket-mem pruned", oc)
	}
	// Rows the restart left as they were keep the generation that wrote them: a restart that
	// changes nothing rewrites nothing.
	for _, o := range c2.Owned() {
		if o.Generation != 1 {
			t.Errorf("unchanged owned row %+v was rewritten (generation %d)", o, o.Generation)
		}
	}
}
