//go:build linux

package integration

// The real ovsplaned binary with --sandbox: kill -9 of the sandbox's ovsdb-server and
// ovs-vswitchd (the daemon keeps serving, the daemon restarts them, the state stays), and
// kill -9 of ovsplaned itself with vhost-user ports in both modes (the next start brings them
// back instead of leaving the server-mode port at ofport -1).

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// sandboxWait bounds each wait of these tests for something that should happen soon.
const sandboxWait = 60 * time.Second

// sandboxLab is an ovsplaned data dir whose Open vSwitch is the daemon's own sandbox.
type sandboxLab struct {
	*daemonHome        // its dir is the data dir; the sandbox is dir/sandbox
	dpdk        string // --sandbox-dpdk
}

// newSandboxLab makes a data dir for ovsplaned --sandbox --sandbox-dpdk=dpdk with config, in
// which $SANDBOX stands for the sandbox directory (created here, before the daemon runs).
func newSandboxLab(t *testing.T, config, dpdk string) *sandboxLab {
	t.Helper()
	// The data dir's name is short: the sandbox's socket paths must fit 107 bytes.
	h := newDaemonHome(t, "osb-", "", 4000)
	l := &sandboxLab{daemonHome: h, dpdk: dpdk}
	if err := os.MkdirAll(filepath.Join(h.dir, "sandbox"), 0o750); err != nil {
		t.Fatal(err)
	}
	config = strings.ReplaceAll(config, "$SANDBOX", filepath.Join(h.dir, "sandbox"))
	if err := os.WriteFile(h.conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range []string{"ovs-vswitchd.log", "ovsdb-server.log"} {
				data, _ := os.ReadFile(l.path(f))
				t.Logf("%s (tail):\n%s", f, testkit.Tail(string(data), 3000))
			}
		}
	})
	return l
}

// path returns the path of a file in the sandbox directory.
func (l *sandboxLab) path(name string) string { return filepath.Join(l.dir, "sandbox", name) }

// endpoint is the sandbox's OVSDB.
func (l *sandboxLab) endpoint() string { return "unix:" + l.path("db.sock") }

// start runs ovsplaned --sandbox and waits until its API answers with OVSDB connected. It fails
// the test when ovsplaned exits meanwhile.
func (l *sandboxLab) start(ctx context.Context) *daemonProc {
	l.t.Helper()
	return l.run(ctx, sandboxWait, (*daemonProc).stopQuietly, "--sandbox", "--sandbox-dpdk", l.dpdk, "--config", l.conf,
		"--data-dir", l.dir, "--log-level", "info")
}

// stopQuietly stops p with SIGTERM (the sandbox's daemons stop with it), else SIGKILL.
func (p *daemonProc) stopQuietly() { p.Stop(30 * time.Second) }

// running fails the test unless ovsplaned p still runs.
func (l *sandboxLab) running(p *daemonProc) {
	l.t.Helper()
	if p.Exited() {
		l.t.Fatalf("ovsplaned exited (%v)", p.Cmd.ProcessState)
	}
}

// statuses returns the daemon's statuses by key.
func (l *sandboxLab) statuses(ctx context.Context) (map[string]*ovsplanev1.Status, error) {
	resp, err := l.api.ListStatus(ctx, connect.NewRequest(&ovsplanev1.ListStatusRequest{}))
	if err != nil {
		return nil, err
	}
	m := map[string]*ovsplanev1.Status{}
	for _, s := range resp.Msg.Statuses {
		m[s.Key] = s
	}
	return m, nil
}

// settled waits until none of the interfaces is pending any more and returns their statuses.
func (l *sandboxLab) settled(ctx context.Context, ifaces ...string) map[string]*ovsplanev1.Status {
	l.t.Helper()
	var st map[string]*ovsplanev1.Status
	lab.WaitFor(l.t, sandboxWait, fmt.Sprintf("interfaces %v to settle", ifaces), func(ctx context.Context) error {
		var err error
		if st, err = l.statuses(ctx); err != nil {
			return err
		}
		for _, name := range ifaces {
			s := st["interface/"+name]
			if s == nil || s.State == ovsplanev1.State_STATE_PENDING || s.State == ovsplanev1.State_STATE_UNSPECIFIED {
				return fmt.Errorf("interface %s: %v", name, s)
			}
		}
		return nil
	})
	return st
}

// allReady waits until the daemon reports OVSDB connected, nothing degraded and every object
// ready.
func (l *sandboxLab) allReady(ctx context.Context) *ovsplanev1.HealthResponse {
	l.t.Helper()
	var h *ovsplanev1.HealthResponse
	lab.WaitFor(l.t, sandboxWait, "every object ready", func(ctx context.Context) error {
		resp, err := l.api.Health(ctx, connect.NewRequest(&ovsplanev1.HealthRequest{}))
		if err != nil {
			return err
		}
		h = resp.Msg
		if !h.OvsdbConnected || len(h.Objects) != 1 || h.Objects["ready"] == 0 || len(h.Degraded) > 0 {
			return fmt.Errorf("health %v", h)
		}
		return nil
	})
	return h
}

// vsctl runs ovs-vsctl against the sandbox's database and fails the test on error.
func (l *sandboxLab) vsctl(ctx context.Context, args ...string) string {
	l.t.Helper()
	out, err := exec.CommandContext(ctx, "ovs-vsctl", append([]string{"--db=" + l.endpoint()}, args...)...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// pidOf reads the pid in the sandbox's pidfile of daemon name.
func (l *sandboxLab) pidOf(name string) (int, error) {
	data, err := os.ReadFile(l.path(name + ".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// procAlive reports whether pid runs (is neither gone nor a zombie).
func procAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// runningThread returns a thread of process pid that has not exited (neither zombie nor
// dead), "" when none has.
func runningThread(pid int) string {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return ""
	}
	for _, task := range tasks {
		if taskAlive(pid, task.Name()) {
			return task.Name()
		}
	}
	return ""
}

// taskAlive reports whether thread tid of pid runs (is neither a zombie nor dead).
func taskAlive(pid int, tid string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, tid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// killSandboxDaemon kills the sandbox's daemon name with SIGKILL and waits until the pidfile
// names a new, running process: the old one is gone and ovsplaned p, still running, started
// another. It returns both pids.
func (l *sandboxLab) killSandboxDaemon(p *daemonProc, name string) (old, now int) {
	l.t.Helper()
	old, err := l.pidOf(name)
	if err != nil || !procAlive(old) {
		l.t.Fatalf("%s: pid %d (%v) not running before the kill", name, old, err)
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		l.t.Fatal(err)
	}
	lab.WaitFor(l.t, sandboxWait, name+" to be replaced", func(context.Context) error {
		l.running(p)
		if procAlive(old) {
			return fmt.Errorf("old pid %d still alive", old)
		}
		var err error
		if now, err = l.pidOf(name); err != nil || now == old || !procAlive(now) {
			return fmt.Errorf("pidfile says %d (%v)", now, err)
		}
		return nil
	})
	return old, now
}

// watchHealth polls Health until stop is closed and returns the first degraded health it saw
// ("" for none). (The test only logs it: a restart may be quicker than a poll.)
func (l *sandboxLab) watchHealth(ctx context.Context, stop <-chan struct{}) <-chan string {
	seen := make(chan string, 1)
	go func() {
		var what string
		defer func() { seen <- what }()
		for {
			resp, err := l.api.Health(ctx, connect.NewRequest(&ovsplanev1.HealthRequest{}))
			if err == nil && what == "" && len(resp.Msg.Degraded) > 0 {
				what = strings.Join(resp.Msg.Degraded, "; ")
			}
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return seen
}

// sandboxUserspaceConfig is the daemon lab's configuration: br0 (netdev) with port cfg0.
const sandboxUserspaceConfig = daemonConfig

// kill -9 of the sandbox's ovsdb-server, then of its ovs-vswitchd: ovsplaned keeps running and
// serving, the killed process is replaced by a new one, the port created through the API
// before is still there and ready, and a new one goes through.
func TestSandboxSurvivesKilledOVS(t *testing.T) {
	lab.Require(t, lab.NeedRoot, lab.NeedOVS)
	ctx := timeout(t, 5*time.Minute)
	l := newSandboxLab(t, sandboxUserspaceConfig, "off")
	p := l.start(ctx)
	if _, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort("api0")})); err != nil {
		t.Fatalf("apply api0: %v", err)
	}
	before := l.settled(ctx, "api0", "cfg0") // the statuses follow the acknowledgement shortly
	l.allReady(ctx)
	if before["interface/api0"].GetOfport() <= 0 {
		t.Fatalf("api0 before the kills: %v (statuses %v)", before["interface/api0"], before)
	}

	for i, name := range []string{"ovsdb-server", "ovs-vswitchd"} {
		t.Run(name, func(t *testing.T) {
			stop := make(chan struct{})
			seen := l.watchHealth(ctx, stop)
			old, now := l.killSandboxDaemon(p, name)
			l.running(p)
			h := l.allReady(ctx)
			close(stop)
			t.Logf("%s pid %d killed, now pid %d; degraded health seen meanwhile: %q; health now %v", name, old, now, <-seen, h)
			st := l.settled(ctx, "api0", "cfg0")
			for _, k := range []string{"interface/api0", "interface/cfg0", "port/api0", "bridge/br0"} {
				if s := st[k]; s.GetState() != ovsplanev1.State_STATE_READY {
					t.Errorf("%s after the restart: %v", k, s)
				}
			}
			if name == "ovsdb-server" && st["interface/api0"].GetOfport() != before["interface/api0"].GetOfport() {
				t.Errorf("api0 ofport %d, before %d: ovs-vswitchd kept running, it should not change",
					st["interface/api0"].GetOfport(), before["interface/api0"].GetOfport())
			}
			if st["interface/api0"].GetOfport() <= 0 {
				t.Errorf("api0 after the restart: %v", st["interface/api0"])
			}
			// Still serving: one more port goes through, applied by ovs-vswitchd.
			port := fmt.Sprintf("after%d", i)
			resp, err := l.api.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: apiPort(port)}))
			if err != nil {
				t.Fatalf("apply %s after the restart: %v", port, err)
			}
			t.Logf("%s: %v", port, resp.Msg)
			l.settled(ctx, port)
			l.running(p)
		})
	}
	p.stop(t)
}

const sandboxVhostConfig = `
bridges:
  - name: br-vhu
    datapath_type: netdev
    ports:
      - name: vhs0
        interfaces:
          - name: vhs0
            type: dpdkvhostuser
      - name: vhc0
        interfaces:
          - name: vhc0
            type: dpdkvhostuserclient
            options:
              vhost-server-path: $SANDBOX/vm-vhc0.sock
`

// vmSide is the listening end of a dpdkvhostuserclient port, as a VM's QEMU (server mode)
// would hold it: it accepts ovs-vswitchd's connections and counts them.
type vmSide struct {
	l        net.Listener
	mu       sync.Mutex
	accepted int
}

func listenVM(t *testing.T, path string) *vmSide {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	vm := &vmSide{l: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			vm.mu.Lock()
			vm.accepted++
			vm.mu.Unlock()
			go func() { _, _ = c.Read(make([]byte, 1)); c.Close() }() // held until the vswitchd goes
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return vm
}

func (vm *vmSide) connections() int {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.accepted
}

// kill -9 of ovsplaned --sandbox with DPDK and vhost-user ports in server mode (ovs-vswitchd
// creates and listens on the socket) and client mode (a VM side listens, ovs-vswitchd
// connects): the sandbox's ovs-vswitchd dies with the daemon and leaves the server-mode socket
// behind (and once, kill -9 of that ovs-vswitchd alone, which the daemon restarts). Five times over, the next start must succeed (it used to fail now and then with
// "Bad file descriptor") and bring both ports back with an ofport (the server-mode port used
// to stay at -1, "Address already in use"), reconnected to the VM side whose socket must not
// be touched.
func TestSandboxKill9KeepsVhostUserPorts(t *testing.T) {
	lab.Require(t, lab.NeedDPDK)
	lab.LockDPDK(t)
	ctx := timeout(t, 10*time.Minute)
	l := newSandboxLab(t, sandboxVhostConfig, "on")
	vmPath := l.path("vm-vhc0.sock")
	vm := listenVM(t, vmPath)
	serverSock := l.path("vhs0")

	const rounds = 5
	for round := 1; round <= rounds; round++ {
		connected := vm.connections()
		p := l.start(ctx)
		st := l.settled(ctx, "vhs0", "vhc0")
		for _, name := range []string{"vhs0", "vhc0"} {
			if s := st["interface/"+name]; s.GetState() != ovsplanev1.State_STATE_READY || s.GetOfport() <= 0 {
				t.Fatalf("round %d: interface %s: %v", round, name, s)
			}
		}
		lab.WaitFor(t, sandboxWait, "ovs-vswitchd to connect to the VM side", func(context.Context) error {
			if n := vm.connections(); n <= connected {
				return fmt.Errorf("%d connections, %d before this start", n, connected)
			}
			return nil
		})
		l.running(p)
		if round == 1 {
			// kill -9 of the DPDK ovs-vswitchd alone: the daemon's sandbox restarts it, and
			// the restart too must find the server-mode socket free.
			connected := vm.connections()
			l.killSandboxDaemon(p, "ovs-vswitchd")
			l.allReady(ctx) // degraded is empty again: the restart has applied the database
			for _, name := range []string{"vhs0", "vhc0"} {
				of := l.vsctl(ctx, "get", "Interface", name, "ofport")
				if n, err := strconv.Atoi(of); err != nil || n <= 0 {
					t.Fatalf("after kill -9 of ovs-vswitchd: %s ofport %s, error %s", name, of,
						l.vsctl(ctx, "get", "Interface", name, "error"))
				}
			}
			lab.WaitFor(t, sandboxWait, "the restarted ovs-vswitchd to connect to the VM side", func(context.Context) error {
				if n := vm.connections(); n <= connected {
					return fmt.Errorf("%d connections, %d before the restart", n, connected)
				}
				return nil
			})
		}
		sw, err := l.pidOf("ovs-vswitchd")
		if err != nil || !procAlive(sw) {
			t.Fatalf("round %d: ovs-vswitchd pid %d (%v) not running", round, sw, err)
		}

		p.kill()
		// Dead once every one of its threads has exited: its main thread goes first, the
		// others (DPDK's) close its files, sockets last.
		lab.WaitFor(t, sandboxWait, "ovs-vswitchd to die with ovsplaned", func(context.Context) error {
			if tid := runningThread(sw); tid != "" {
				return fmt.Errorf("thread %s of ovs-vswitchd pid %d still runs", tid, sw)
			}
			return nil
		})
		// The fault landed: the server-mode socket is left behind, nobody listening on it; the
		// VM side's socket is still there.
		if fi, err := os.Lstat(serverSock); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("round %d: %s after kill -9: %v %v, want the stale socket", round, serverSock, fi, err)
		}
		if c, err := net.Dial("unix", serverSock); err == nil {
			c.Close()
			t.Fatalf("round %d: %s still accepts connections after kill -9", round, serverSock)
		}
		if _, err := os.Lstat(vmPath); err != nil {
			t.Fatalf("round %d: the VM side's socket: %v", round, err)
		}
	}
	// A last start, stopped cleanly: the VM side's socket is still its own.
	p := l.start(ctx)
	l.settled(ctx, "vhs0", "vhc0")
	p.stop(t)
	if c, err := net.Dial("unix", vmPath); err != nil {
		t.Errorf("the VM side's socket no longer answers: %v", err)
	} else {
		c.Close()
	}
}
