//go:build linux

package agent_test

// Chaos tests of the fabric (issue 17): the leader of the 3-member cluster killed during a route
// change, the controller killed with SIGKILL in its own process, a site's agent killed and
// restarted, the whole cluster killed. Each test first proves its fault landed (the process is
// gone, the leader changed, the lease epoch moved), then that no agent lost its table, installed
// a version twice or out of order, and that every agent ends on the newest version.
//
// The controller and the restarted agent run as children: the test binary re-executed with
// chaosRoleEnv set, which TestMain turns into the role instead of running the tests.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/overlay/agent"
	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Environment of a child role.
const (
	chaosRoleEnv      = "OVSPLANE_CHAOS_ROLE"      // "controller" or "agent"
	chaosEndpointsEnv = "OVSPLANE_CHAOS_ENDPOINTS" // comma-separated cluster endpoints
	chaosNameEnv      = "OVSPLANE_CHAOS_NAME"      // lease holder or node name
	chaosKindEnv      = "OVSPLANE_CHAOS_KIND"      // node kind (agent)
)

func TestMain(m *testing.M) {
	if role := os.Getenv(chaosRoleEnv); role != "" {
		os.Exit(childRole(role))
	}
	os.Exit(m.Run())
}

// childRole runs a controller or an agent until SIGTERM/SIGKILL; an agent prints every install
// as one JSON line {"v":VERSION,"routes":{…}} on stdout.
func childRole(role string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	fc, err := fabric.Open(octx, fabric.Config{Endpoints: strings.Split(os.Getenv(chaosEndpointsEnv), ","), Logger: log})
	cancel()
	if err != nil {
		log.Error("child: open fabric", "err", err)
		return 2
	}
	defer fc.Close()
	name := os.Getenv(chaosNameEnv)
	switch role {
	case "controller":
		c, err := controller.New(controller.Config{Fabric: fc, Holder: name, CostHysteresis: controller.MinCostHysteresis, LeaseTTL: time.Second, Period: 100 * time.Millisecond, Logger: log})
		if err != nil {
			log.Error("child: controller", "err", err)
			return 2
		}
		_ = c.Run(ctx)
	case "agent":
		a, err := agent.New(agent.Config{Fabric: fc, Node: fabric.NodeSpec{Name: name, Kind: fabric.Kind(os.Getenv(chaosKindEnv))},
			Installer: stdoutInstaller{json.NewEncoder(os.Stdout)}, Period: 50 * time.Millisecond, MaxBackoff: 400 * time.Millisecond,
			StepTimeout: 2 * time.Second, Logger: log})
		if err != nil {
			log.Error("child: agent", "err", err)
			return 2
		}
		_ = a.Run(ctx)
	default:
		log.Error("child: unknown role", "role", role)
		return 2
	}
	return 0
}

// install is one recorded Install call.
type install struct {
	V      int64             `json:"v"`
	Routes map[string]string `json:"routes"`
}

// stdoutInstaller reports installs to the parent test.
type stdoutInstaller struct{ enc *json.Encoder }

func (s stdoutInstaller) Install(_ context.Context, v int64, routes map[string]string) error {
	return s.enc.Encode(install{V: v, Routes: routes})
}

// history is a recording Installer keeping every install in order.
type history struct {
	mu  sync.Mutex
	all []install
}

func (h *history) Install(_ context.Context, v int64, routes map[string]string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.all = append(h.all, install{V: v, Routes: maps.Clone(routes)})
	return nil
}

func (h *history) get() []install {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]install(nil), h.all...)
}

// checkHistory fails unless installs are strictly increasing in version, none is an empty
// table (an agent never clears its forwarding), and the last is version last.
func checkHistory(t *testing.T, node string, h []install, last int64) {
	t.Helper()
	for i, in := range h {
		if len(in.Routes) == 0 {
			t.Errorf("agent %s: install %d (version %d) has an empty table", node, i, in.V)
		}
		if i > 0 && in.V <= h[i-1].V {
			t.Errorf("agent %s: version %d installed after %d: not strictly increasing", node, in.V, h[i-1].V)
		}
	}
	if len(h) == 0 || h[len(h)-1].V != last {
		t.Errorf("agent %s: installs %v: want the last to be version %d", node, versionsOf(h), last)
	}
}

func versionsOf(h []install) []int64 {
	out := make([]int64, len(h))
	for i, in := range h {
		out[i] = in.V
	}
	return out
}

// chaosBed is a cluster with the four nodes registered and their links reported.
type chaosBed struct {
	cl *lab.OVSDBCluster
	fc *fabric.Client
}

func newChaosBed(t *testing.T) *chaosBed {
	t.Helper()
	cl := lab.StartOVSDBCluster(t, "../fabric/schema/fabric.ovsschema")
	fc := open(t, cl)
	for _, s := range specs {
		if err := fc.RegisterNode(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	report(t, fc, "s1", "s2", 5000)
	report(t, fc, "o1", "s1", 5000)
	report(t, fc, "o2", "s2", 5000)
	return &chaosBed{cl: cl, fc: fc}
}

// controller starts an in-process controller.
func (b *chaosBed) controller(t *testing.T, holder string) *controller.Controller {
	t.Helper()
	ctl, err := controller.New(controller.Config{Fabric: open(t, b.cl), Holder: holder, CostHysteresis: controller.MinCostHysteresis, LeaseTTL: time.Second, Period: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctl.Run)
	return ctl
}

// agents starts an in-process agent with a history for every node but skip.
func (b *chaosBed) agents(t *testing.T, skip string) (map[string]*agent.Agent, map[string]*history) {
	t.Helper()
	as, hs := map[string]*agent.Agent{}, map[string]*history{}
	for _, s := range specs {
		if s.Name == skip {
			continue
		}
		hs[s.Name] = &history{}
		as[s.Name] = newAgent(t, open(t, b.cl), s, hs[s.Name])
		run(t, as[s.Name].Run)
	}
	return as, hs
}

// version waits until the fabric's route version is v.
func (b *chaosBed) version(t *testing.T, v int64) {
	t.Helper()
	lab.WaitFor(t, 20*time.Second, fmt.Sprintf("route version %d", v), func(ctx context.Context) error {
		if st, err := b.fc.Status(ctx); err != nil || st.RouteVersion != v {
			return fmt.Errorf("status %+v, %v", st, err)
		}
		return nil
	})
}

// child is a re-executed test binary running a role.
type child struct {
	cmd  *exec.Cmd
	done chan error
	mu   sync.Mutex
	out  []install
}

// startChild runs role for name (kind for an agent) in a child process killed at cleanup.
func startChild(t *testing.T, cl *lab.OVSDBCluster, role, name string, kind fabric.Kind) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), chaosRoleEnv+"="+role, chaosEndpointsEnv+"="+strings.Join(cl.Endpoints(), ","),
		chaosNameEnv+"="+name, chaosKindEnv+"="+string(kind))
	cmd.Stderr = t.Output()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s child %s: %v", role, name, err)
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	exited := make(chan struct{}) // closed once Wait returned; c.done may be drained by kill9
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var in install
			if json.Unmarshal(sc.Bytes(), &in) == nil {
				c.mu.Lock()
				c.out = append(c.out, in)
				c.mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return c
}

func (c *child) installs() []install {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]install(nil), c.out...)
}

// kill9 sends SIGKILL and proves the process died of it and its PID is gone.
func (c *child) kill9(t *testing.T) {
	t.Helper()
	pid := c.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	err := <-c.done
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child %d: exit %v; want killed by SIGKILL", pid, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("child %d still exists after SIGKILL: %v", pid, err)
	}
}

// pidGone fails unless no process has pid.
func pidGone(t *testing.T, what string, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("%s (pid %d) still exists: %v", what, pid, err)
	}
}

// TestChaosLeaderKillDuringRouteChange kills the cluster leader (proved leader by cluster/status)
// right after a link change, while the controller publishes and the agents install and ack:
// a new leader is elected, the controller's versions have no gap or repeat, and every agent
// installed strictly increasing versions ending at the newest, never an empty table.
func TestChaosLeaderKillDuringRouteChange(t *testing.T) {
	b := newChaosBed(t)
	ctl := b.controller(t, "ctl")
	b.version(t, 1)
	agents, hs := b.agents(t, "")
	waitAll(t, b.fc, agents, 1)

	leader := b.cl.Leader(t, 10*time.Second, lab.ClusterSize)
	st, err := leader.Status(t.Context())
	if err != nil || !strings.Contains(st, "Role: leader") {
		t.Fatalf("member %d before the kill: %v\n%s; want Role: leader", leader.Index, err, st)
	}
	pid := leader.PID()
	// A change, then the kill while it is being published and installed, then more changes.
	const changes = 6
	for i := range changes {
		report(t, b.fc, "s1", "s2", int64(6000+1000*i))
		if i == 1 {
			leader.Kill(t)
			pidGone(t, fmt.Sprintf("leader member %d", leader.Index), pid)
		}
		time.Sleep(150 * time.Millisecond) // let the change be published (some may merge: fine)
	}
	newLeader := b.cl.Leader(t, 20*time.Second, lab.ClusterSize-1)
	if newLeader == leader {
		t.Fatalf("member %d was killed but is reported leader", leader.Index)
	}
	// The controller settles on the last change: its version is the fabric's newest.
	var last int64
	lab.WaitFor(t, 20*time.Second, "the controller to publish the last change", func(ctx context.Context) error {
		tables, err := b.fc.Routes(ctx, ctl.Stats().Version)
		want := fmt.Sprint(int64(6000+1000*(changes-1)) + 10_000) // latency + 10^12/10^8 µs
		if err != nil || !strings.HasSuffix(tables["s1"]["s2"], " "+want) {
			return fmt.Errorf("controller %+v, s1→s2 %q, %v; want cost %s", ctl.Stats(), tables["s1"]["s2"], err, want)
		}
		last = ctl.Stats().Version
		return nil
	})
	waitAll(t, b.fc, agents, last)
	s := ctl.Stats()
	if s.Published != int(last) || s.Fenced != 0 {
		t.Errorf("controller %+v: want %d publishes (versions 1..%d, none twice, none skipped), none fenced", s, last, last)
	}
	if last < 3 {
		t.Errorf("only %d versions for %d changes: the changes did not move routes", last, changes)
	}
	for n, h := range hs {
		checkHistory(t, n, h.get(), last)
		// An ack whose transaction was cut by the kill may have committed: the agent's retry
		// then finds the version already acked and does not count it again. So every install is
		// acked at most once, and an install without a counted ack needs a failed step to
		// explain it (waitAll proved the last version is acked).
		if a := agents[n].Stats(); a.Acks > len(h.get()) || (a.Acks < len(h.get()) && a.Errors == 0) {
			t.Errorf("agent %s: %d acks for %d installs, %d failed steps: want each installed version acked once, or fewer acks after failures",
				n, a.Acks, len(h.get()), a.Errors)
		}
	}
	t.Logf("leader member %d (pid %d) killed; new leader member %d; versions 1..%d; installs o1 %v",
		leader.Index, pid, newLeader.Index, last, versionsOf(hs["o1"].get()))
}

// TestChaosControllerKill9 runs the controller in a child process and kills it with SIGKILL:
// the agents keep their last table (no install, no clear) while no controller runs, a second
// controller takes the lease (the epoch moves) and publishes the next version, and the agents
// install it.
func TestChaosControllerKill9(t *testing.T) {
	b := newChaosBed(t)
	ctlA := startChild(t, b.cl, "controller", "ctl-a", "")
	b.version(t, 1)
	agents, hs := b.agents(t, "")
	waitAll(t, b.fc, agents, 1)
	st, err := b.fc.Status(t.Context())
	if err != nil || st.Lease.Holder != "ctl-a" {
		t.Fatalf("status %+v, %v; want ctl-a holding the lease", st, err)
	}
	epochA := st.Lease.Epoch

	ctlA.kill9(t)
	// A change while no controller runs: nothing is published, the agents keep version 1.
	report(t, b.fc, "s1", "s2", 8000)
	lab.WaitFor(t, 10*time.Second, "ctl-a's lease to expire", func(ctx context.Context) error {
		st, err := b.fc.Status(ctx)
		if err != nil || st.Lease.Expires.After(time.Now()) {
			return fmt.Errorf("status %+v, %v", st, err)
		}
		return nil
	})
	if st, err := b.fc.Status(t.Context()); err != nil || st.RouteVersion != 1 {
		t.Fatalf("status %+v, %v; want version 1 with no controller running", st, err)
	}
	for n, h := range hs {
		if got := h.get(); len(got) != 1 || got[0].V != 1 || !maps.Equal(got[0].Routes, agents[n].Stats().Routes) {
			t.Errorf("agent %s without a controller: installs %v, stats %+v; want version 1 kept", n, versionsOf(got), agents[n].Stats())
		}
	}

	ctlB := b.controller(t, "ctl-b")
	b.version(t, 2)
	st, err = b.fc.Status(t.Context())
	if err != nil || st.Lease.Holder != "ctl-b" || st.Lease.Epoch <= epochA {
		t.Fatalf("status %+v, %v; want ctl-b holding the lease with an epoch above %d", st, err, epochA)
	}
	waitAll(t, b.fc, agents, 2)
	if s := ctlB.Stats(); s.Published != 1 || s.Epoch != st.Lease.Epoch {
		t.Errorf("ctl-b %+v: want one publish at epoch %d", s, st.Lease.Epoch)
	}
	for n, h := range hs {
		checkHistory(t, n, h.get(), 2)
	}
	t.Logf("ctl-a (pid %d, epoch %d) killed; ctl-b epoch %d published version 2", ctlA.cmd.Process.Pid, epochA, st.Lease.Epoch)
}

// TestChaosSiteRestart runs o2's agent in a child process, kills it with SIGKILL while versions
// are published, and restarts it: the fabric shows o2 holding MinApplied back while it is gone,
// and the restarted agent installs the newest version once and acks it.
func TestChaosSiteRestart(t *testing.T) {
	b := newChaosBed(t)
	b.controller(t, "ctl")
	b.version(t, 1)
	agents, hs := b.agents(t, "o2")
	o2 := startChild(t, b.cl, "agent", "o2", fabric.KindOrdinary)
	waitAll(t, b.fc, agents, 1)
	lab.WaitFor(t, 10*time.Second, "o2 to ack version 1", func(ctx context.Context) error {
		if _, per, err := b.fc.MinApplied(ctx); err != nil || per["o2"] != 1 {
			return fmt.Errorf("applied %v, %v", per, err)
		}
		return nil
	})
	o2.kill9(t)
	report(t, b.fc, "o2", "s2", 9000)
	b.version(t, 2)
	report(t, b.fc, "s1", "s2", 9000)
	b.version(t, 3)
	waitAll2 := func(v int64) {
		lab.WaitFor(t, 20*time.Second, fmt.Sprintf("the running agents at %d", v), func(context.Context) error {
			for n, a := range agents {
				if s := a.Stats(); s.Applied != v {
					return fmt.Errorf("agent %s %+v", n, s)
				}
			}
			return nil
		})
	}
	waitAll2(3)
	if minV, per, err := b.fc.MinApplied(t.Context()); err != nil || minV != 1 || per["o2"] != 1 {
		t.Fatalf("MinApplied %d %v, %v; want 1, held back by the killed o2", minV, per, err)
	}
	o2b := startChild(t, b.cl, "agent", "o2", fabric.KindOrdinary)
	waitAll(t, b.fc, agents, 3) // also waits for MinApplied 3: o2 caught up
	got := o2b.installs()
	if len(got) != 1 || got[0].V != 3 || len(got[0].Routes) == 0 {
		t.Errorf("restarted o2 installs %v; want version 3 once, with routes", versionsOf(got))
	}
	for n, h := range hs {
		checkHistory(t, n, h.get(), 3)
	}
	checkHistory(t, "o2 (before the kill)", o2.installs(), 1)
}

// TestChaosFabricUnreachable kills every cluster member: the agents keep forwarding on their
// last table (no install, no clear) and report the fabric unreachable; when the members come
// back the controller publishes the pending change and every agent catches up.
func TestChaosFabricUnreachable(t *testing.T) {
	b := newChaosBed(t)
	ctl := b.controller(t, "ctl")
	b.version(t, 1)
	agents, hs := b.agents(t, "")
	waitAll(t, b.fc, agents, 1)
	pids := make([]int, len(b.cl.Members))
	for i, m := range b.cl.Members {
		pids[i] = m.PID()
		m.Kill(t)
		pidGone(t, fmt.Sprintf("member %d", i), pids[i])
	}
	lab.WaitFor(t, 30*time.Second, "agents to find the fabric unreachable", func(context.Context) error {
		for n, a := range agents {
			if s := a.Stats(); s.Reachable {
				return fmt.Errorf("agent %s %+v", n, s)
			}
		}
		return nil
	})
	time.Sleep(time.Second) // the agents keep retrying; nothing may be installed meanwhile
	for n, h := range hs {
		if got := h.get(); len(got) != 1 || got[0].V != 1 || !maps.Equal(got[0].Routes, agents[n].Stats().Routes) {
			t.Errorf("agent %s with the fabric down: installs %v; want version 1 kept", n, versionsOf(got))
		}
	}
	for _, m := range b.cl.Members {
		m.Start(t)
	}
	b.cl.Leader(t, 30*time.Second, lab.ClusterSize)
	report(t, b.fc, "o1", "s1", 9000)
	b.version(t, 2)
	waitAll(t, b.fc, agents, 2)
	for n, h := range hs {
		checkHistory(t, n, h.get(), 2)
	}
	if s := ctl.Stats(); s.Published != 2 {
		t.Errorf("controller %+v: want versions 1 and 2 published once each", s)
	}
	t.Logf("members %v killed and restarted", pids)
}
