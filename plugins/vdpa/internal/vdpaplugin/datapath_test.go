package vdpaplugin

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/plugins/vdpa/standintest"
	"github.com/ovsplane/ovsplane/vdpa"
)

// setupStandIn is setup over the CX-6 Dx switchdev fixture with config dpdk_vdpa naming a fresh
// stand-in; it returns the stand-in, the fake daemon and the plugin.
func setupStandIn(t *testing.T) (*standintest.StandIn, *sdktest.FakeHost, *Plugin) {
	t.Helper()
	s := standintest.Install(t)
	k := bootKernel(t, loadFixture(t, "cx6dx-switchdev", nil))
	p := newPlugin(t, k)
	h := sdktest.NewFakeHost(t, p)
	if err := h.Configure([]byte(`{"dpdk_vdpa": "` + s.Path + `"}`)); err != nil {
		t.Fatal(err)
	}
	return s, h, p
}

// metricsOf returns the latest sample's metrics of job by name.
func metricsOf(t *testing.T, h *sdktest.FakeHost, job string) map[string]float64 {
	t.Helper()
	samples, err := h.Stats(api.StatsRequest{Jobs: []string{job}, IntervalMillis: 100}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, s := range samples {
		if s.Job != job {
			t.Fatalf("sample of %q, asked for %q", s.Job, job)
		}
		for _, mt := range s.Metrics {
			m[mt.Name] = mt.Value
		}
	}
	return m
}

// TestDPDKPMDJob: a dpdk-pmd port's Attach returns its dpdk-vdpa job; Start runs the configured
// program (the stand-in) with exactly the argv the plan gives, as the plugin's child; a second
// Start leaves it alone; a crash and a kill -9 are each followed by a restart (restart count and
// last exit status in the stats, Degraded health in between is not asserted: it is transient);
// Stop leaves no process; Close stops a running job.
func TestDPDKPMDJob(t *testing.T) {
	s, h, p := setupStandIn(t)
	a, err := h.Attach(vdpaPort("vm2", "vf", "0", "mode", "dpdk-pmd"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Jobs) != 1 || a.Jobs[0].Name != "dpdk-vdpa-vm2" || a.Jobs[0].Type != JobType {
		t.Fatalf("jobs %+v", a.Jobs)
	}
	var cfg map[string]string
	if err := json.Unmarshal(a.Jobs[0].Config, &cfg); err != nil || cfg["port"] != "vm2" || cfg["vf"] != "0000:65:00.2" || cfg["socket_dir"] != "/run/ovsplane/vdpa" {
		t.Errorf("job config %s (%v)", a.Jobs[0].Config, err)
	}
	if a.Endpoints["dpdk-vdpa-job"] != "dpdk-vdpa-vm2" || a.Endpoints["vhost-user"] != "/run/ovsplane/vdpa/vm2-0" || a.Endpoints["dpdk-vdpa"] != "" {
		t.Errorf("endpoints %v", a.Endpoints)
	}
	if !strings.Contains(a.Status, "supervised as job dpdk-vdpa-vm2") {
		t.Errorf("status %q", a.Status)
	}

	status, err := h.StartJob(a.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	run := s.WaitRuns(t, 1)[0]
	want := []string{s.Path, "--file-prefix=ovsplane-vdpa-vm2", "-a", "0000:65:00.2,class=vdpa", "--", "--iface", "/run/ovsplane/vdpa/vm2-", "--client"}
	if !slices.Equal(run.Argv, want) || run.PPID != os.Getpid() || !standintest.Alive(run.PID) {
		t.Errorf("run %+v, want argv %q as a child of %d", run, want, os.Getpid())
	}
	// sdktest's host starts an attachment's jobs itself after Attach, as the daemon does, so
	// this Start finds the job running already.
	if !strings.Contains(status, "started pid") && !strings.Contains(status, "running pid") {
		t.Errorf("start status %q", status)
	}
	if _, err := h.StartJob(a.Jobs[0]); err != nil || len(s.Runs(t)) != 1 {
		t.Errorf("second start: %v, %d runs", err, len(s.Runs(t)))
	}
	if health, err := h.Health(); err != nil || health.State != api.HealthOK || !strings.Contains(health.Message, "1 of 1 dpdk-vdpa processes running") {
		t.Errorf("health %+v %v", health, err)
	}

	// A crash (exit status 1), then a kill -9: each restarts the driver.
	if err := syscall.Kill(run.PID, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	second := s.WaitRuns(t, 2)[1]
	standintest.WaitGone(t, run.PID, "the crashed stand-in is reaped")
	var m map[string]float64
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if m = metricsOf(t, h, "dpdk-vdpa-vm2"); m["process_up"] != 1 || m["process_pid"] != float64(second.PID) {
			return fmt.Errorf("metrics %v", m)
		}
		return nil
	})
	if m["process_restarts_total"] != 1 || m["process_last_exit_code"] != 1 {
		t.Errorf("after a crash: metrics %v", m)
	}
	if err := syscall.Kill(second.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	third := s.WaitRuns(t, 3)[2]
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if m = metricsOf(t, h, "dpdk-vdpa-vm2"); m["process_restarts_total"] != 2 || m["process_pid"] != float64(third.PID) {
			return fmt.Errorf("metrics %v", m)
		}
		return nil
	})
	if m["process_last_exit_code"] != -9 || !slices.Equal(third.Argv, want) {
		t.Errorf("after kill -9: metrics %v, argv %q", m, third.Argv)
	}

	// Stop: the process is gone and no further run starts.
	if err := h.StopJob("dpdk-vdpa-vm2"); err != nil {
		t.Fatal(err)
	}
	if standintest.Alive(third.PID) {
		t.Errorf("pid %d alive after Stop", third.PID)
	}
	if err := h.StopJob("dpdk-vdpa-vm2"); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if n := len(s.Runs(t)); n != 3 {
		t.Errorf("%d runs after Stop, want 3", n)
	}

	// Close (the plugin's shutdown) stops a running job.
	if _, err := h.StartJob(a.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	fourth := s.WaitRuns(t, 4)[3]
	p.Close()
	if standintest.Alive(fourth.PID) {
		t.Errorf("pid %d alive after Close", fourth.PID)
	}
}

// TestDetachStopsJob: detaching a dpdk-pmd port stops its job, whatever the daemon did first.
func TestDetachStopsJob(t *testing.T) {
	s, h, p := setupStandIn(t)
	a, err := h.Attach(vdpaPort("vm2", "vf", "0", "mode", "dpdk-pmd"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartJob(a.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	run := s.WaitRuns(t, 1)[0]
	if err := h.Detach("br0", "vm2"); err != nil {
		t.Fatal(err)
	}
	if standintest.Alive(run.PID) || len(p.sup.Names()) != 0 {
		t.Errorf("after Detach: pid %d alive %v, jobs %v", run.PID, standintest.Alive(run.PID), p.sup.Names())
	}
}

// TestReconfigureRepathsJobs: a new dpdk_vdpa restarts a running job with the new program and
// the same arguments.
func TestReconfigureRepathsJobs(t *testing.T) {
	s, h, _ := setupStandIn(t)
	a, err := h.Attach(vdpaPort("vm2", "vf", "0", "mode", "dpdk-pmd"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartJob(a.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	old := s.WaitRuns(t, 1)[0]
	other := standintest.Install(t)
	if err := h.Configure([]byte(`{"dpdk_vdpa": "` + other.Path + `"}`)); err != nil {
		t.Fatal(err)
	}
	run := other.WaitRuns(t, 1)[0]
	if standintest.Alive(old.PID) || !slices.Equal(run.Argv[1:], old.Argv[1:]) || run.Argv[0] != other.Path {
		t.Errorf("old run %+v alive %v, new run %+v", old, standintest.Alive(old.PID), run)
	}
	if err := h.StopJob(a.Jobs[0].Name); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseJob: any job configuration either is refused as InvalidArgument or renders an
// argument vector that sdk.Command accepts, for the port the job is named after.
func FuzzParseJob(f *testing.F) {
	f.Add("dpdk-vdpa-vm2", []byte(`{"port":"vm2","vf":"0000:65:00.2","socket_dir":"/run/ovsplane/vdpa"}`))
	f.Add("dpdk-vdpa-a", []byte(`{"port":"a","vf":"0000:00:00.0","socket_dir":"/"}`))
	f.Add("dpdk-vdpa-x", []byte(`{"port":"x\u0000","vf":"","socket_dir":"/a/../b"}`))
	f.Fuzz(func(t *testing.T, name string, config []byte) {
		c, err := parseJob(api.Job{Name: name, Type: JobType, Config: config})
		if err != nil {
			if api.CodeOf(err) != api.InvalidArgument {
				t.Fatalf("%v", err)
			}
			return
		}
		cmd := sdk.Command{Path: DefaultDPDKVDPA, Args: vdpa.DPDKVDPAArgs(c.Port, c.VF, c.SocketDir)}
		if err := cmd.Validate(); err != nil || name != jobPrefix+c.Port {
			t.Fatalf("job %q %q accepted, command %q: %v", name, config, cmd.Argv(), err)
		}
	})
}

// TestDPDKPMDJobRefused: a missing program fails Attach before any host work; bad jobs are
// InvalidArgument naming the field; with supervise_dpdk_vdpa false Start is refused.
func TestDPDKPMDJobRefused(t *testing.T) {
	k := bootKernel(t, loadFixture(t, "cx6dx-switchdev", nil))
	h := sdktest.NewFakeHost(t, newPlugin(t, k))
	if err := h.Configure(nil); err != nil { // the default program, absent here
		t.Fatal(err)
	}
	before := dump(t, k)
	_, err := h.Attach(vdpaPort("vm2", "vf", "0", "mode", "dpdk-pmd"))
	if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), DefaultDPDKVDPA) || !strings.Contains(err.Error(), "config dpdk_vdpa") {
		t.Errorf("attach without the program: %v", err)
	}
	if after := dump(t, k); after != before {
		t.Errorf("host changed by a refused attach:\n%s", lineDiff(before, after))
	}
	if err := h.Configure([]byte(`{"dpdk_vdpa": "` + anyProgram + `"}`)); err != nil {
		t.Fatal(err)
	}
	good := `{"port":"vm2","vf":"0000:65:00.2","socket_dir":"/run/ovsplane/vdpa"}`
	for _, tc := range []struct {
		job   api.Job
		field string
	}{
		{api.Job{Name: "dpdk-vdpa-vm2", Type: "other", Config: []byte(good)}, "type"},
		{api.Job{Name: "dpdk-vdpa-vm3", Type: JobType, Config: []byte(good)}, "name"},
		{api.Job{Name: "dpdk-vdpa-vm2", Type: JobType, Config: []byte(`{"port":"vm2","vf":"0000:65:00.2","socket_dir":"/run","argv":["sh"]}`)}, "config"},
		{api.Job{Name: "dpdk-vdpa-vm2", Type: JobType, Config: []byte(`{"port":"vm2","vf":"0000:65:00.2 --x","socket_dir":"/run"}`)}, "config.vf"},
		{api.Job{Name: "dpdk-vdpa-vm2", Type: JobType, Config: []byte(`{"port":"vm2","vf":"0000:65:00.2","socket_dir":"run"}`)}, "config.socket_dir"},
		{api.Job{Name: "dpdk-vdpa-a b", Type: JobType, Config: []byte(`{"port":"a b","vf":"0000:65:00.2","socket_dir":"/run"}`)}, "config.port"},
		{api.Job{Name: "dpdk-vdpa-vm2", Type: JobType, Config: []byte(`{"port":"vm2","vf":"0000:65:00.2","socket_dir":"/` + strings.Repeat("x", 2000) + `"}`)}, "config"},
	} {
		_, err := h.StartJob(tc.job)
		var e *api.Error
		if api.CodeOf(err) != api.InvalidArgument || !asAPI(err, &e) || len(e.Problems) == 0 || e.Problems[0].Field != tc.field {
			t.Errorf("%s %s: %v, want a problem on %s", tc.job.Name, tc.job.Config, err, tc.field)
		}
	}
	if err := h.Configure([]byte(`{"supervise_dpdk_vdpa": false}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartJob(api.Job{Name: "dpdk-vdpa-vm2", Type: JobType, Config: []byte(good)}); api.CodeOf(err) != api.FailedPrecondition {
		t.Errorf("start with supervision off: %v", err)
	}
}

// TestDPDKPMDJobCrashLoop: a driver that dies at start is restarted and the plugin's health is
// Degraded, naming the job and its exit status.
func TestDPDKPMDJobCrashLoop(t *testing.T) {
	s, h, _ := setupStandIn(t)
	a, err := h.Attach(vdpaPort("vm2", "vf", "0", "mode", "dpdk-pmd"))
	if err != nil {
		t.Fatal(err)
	}
	s.Set(t, "crash-on-start", true)
	if _, err := h.StartJob(a.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	s.WaitRuns(t, 2)
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		health, err := h.Health()
		if err != nil || health.State != api.HealthDegraded || !strings.Contains(health.Message, "dpdk-vdpa-vm2 restarting after exit status 2") {
			return fmt.Errorf("health %+v %v", health, err)
		}
		return nil
	})
	if err := h.StopJob(a.Jobs[0].Name); err != nil {
		t.Fatal(err)
	}
}
