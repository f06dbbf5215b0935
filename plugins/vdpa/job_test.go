package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/plugins/vdpa/internal/vdpaplugin"
	"github.com/ovsplane/ovsplane/plugins/vdpa/standintest"
)

// restarts reads process_restarts_total and process_pid of job from one stats sample.
func restarts(ctx context.Context, t *testing.T, dp api.DataPath, job string) (restarts, pid float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got := false
	errEnough := fmt.Errorf("enough")
	err := dp.Stats(ctx, api.StatsRequest{Jobs: []string{job}, IntervalMillis: 100}, func(s api.StatsSample) error {
		for _, m := range s.Metrics {
			switch m.Name {
			case "process_restarts_total":
				restarts = m.Value
			case "process_pid":
				pid = m.Value
			}
		}
		got = s.Job == job
		return errEnough
	})
	if !got {
		t.Fatalf("no stats sample of %s: %v", job, err)
	}
	return restarts, pid
}

// TestDPDKVDPAJobUnderThePluginHost runs the real plugin binary under ovsplane's plugin host
// (simulate mode over the CX-6 Dx switchdev fixture, dpdk_vdpa the stand-in): a dpdk-pmd port's
// Attach returns the job; the host's DataPath starts it and the stand-in runs with the planned
// argv as a child of the plugin process; a kill -9 of the stand-in is followed by a restart
// (the stats say so); Stop leaves no process; a kill -9 of the plugin process takes the
// stand-in with it (no orphan); and the host's Close, stopping the restarted plugin, stops its
// stand-in with SIGTERM.
func TestDPDKVDPAJobUnderThePluginHost(t *testing.T) {
	ctx := t.Context()
	standin := standintest.Install(t)
	pluginDir := testkit.ShortTempDir(t, "vdpaplugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-vdpa")
	fixtureFile, err := filepath.Abs(switchdevFixture)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LogBuffer{}
	h, err := host.New(host.Options{
		PluginDir: pluginDir, DataDir: testkit.ShortTempDir(t, "vdpadata"),
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Environ: os.Environ(), HealthInterval: 200 * time.Millisecond,
		Facts: func(context.Context) (api.HostFacts, error) { return sdktest.DefaultFacts(), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	err = h.Start(ctx, []model.Plugin{{Name: "vdpa", Path: "ovsplane-plugin-vdpa", SHA256: sum,
		Config: map[string]any{"simulate": fixtureFile, "dpdk_vdpa": standin.Path}}})
	if err != nil {
		t.Fatal(err)
	}
	pp, _, ok := h.PortProvider("vdpa")
	if !ok {
		t.Fatal("no port provider for vdpa")
	}
	req := api.PortRequest{Bridge: "br-vdpa", Name: "vm2", Type: "vdpa", Options: map[string]string{"pf": "0000:65:00.0", "vf": "0", "mode": "dpdk-pmd"}}
	a, err := pp.Attach(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.ValidateAttachment(sdktest.DefaultFacts(), req, a); err != nil {
		t.Fatal(err)
	}
	if len(a.Jobs) != 1 || a.Jobs[0].Type != vdpaplugin.JobType {
		t.Fatalf("jobs %+v", a.Jobs)
	}
	job := a.Jobs[0]
	dp, plugin, ok := h.DataPath(vdpaplugin.JobType)
	if !ok || plugin != "vdpa" {
		t.Fatalf("DataPath(%s) = %v %q %v", vdpaplugin.JobType, dp, plugin, ok)
	}
	pluginPID := h.Plugins()[0].PID

	if _, err := dp.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	first := standin.WaitRuns(t, 1)[0]
	want := []string{standin.Path, "--file-prefix=ovsplane-vdpa-vm2", "-a", "0000:65:00.2,class=vdpa", "--", "--iface", "/run/ovsplane/vdpa/vm2-", "--client"}
	if !slices.Equal(first.Argv, want) || first.PPID != pluginPID {
		t.Errorf("run %+v, want argv %q as a child of the plugin %d", first, want, pluginPID)
	}

	// kill -9 of the driver: restarted.
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := standin.WaitRuns(t, 2)[1]
	testkit.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if n, pid := restarts(ctx, t, dp, job.Name); n != 1 || pid != float64(second.PID) {
			return fmt.Errorf("restarts %v, pid %v (second run %d)", n, pid, second.PID)
		}
		return nil
	})
	standintest.WaitGone(t, first.PID, "the killed stand-in is reaped")

	// Stop: gone at once.
	if err := dp.Stop(ctx, job.Name); err != nil {
		t.Fatal(err)
	}
	if standintest.Alive(second.PID) {
		t.Errorf("stand-in %d alive after Stop", second.PID)
	}

	// kill -9 of the plugin process: the driver goes with it.
	if _, err := dp.Start(ctx, job); err != nil {
		t.Fatal(err)
	}
	third := standin.WaitRuns(t, 3)[2]
	if err := syscall.Kill(pluginPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	standintest.WaitGone(t, third.PID, "the stand-in dies with its plugin (no orphan)")

	// The host restarts the plugin; its job runs again under the new process, and the host's
	// Close stops the plugin, which stops the driver with SIGTERM.
	var newPID int
	testkit.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		st := h.Plugins()[0]
		if st.State != host.StateRunning || st.PID == pluginPID || st.PID == 0 {
			return fmt.Errorf("plugin %s pid %d (was %d)", st.State, st.PID, pluginPID)
		}
		newPID = st.PID
		return nil
	})
	testkit.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		dp, _, _ = h.DataPath(vdpaplugin.JobType)
		_, err := dp.Start(ctx, job)
		return err
	})
	fourth := standin.WaitRuns(t, 4)[3]
	if fourth.PPID != newPID {
		t.Errorf("fourth run's parent %d, want the restarted plugin %d", fourth.PPID, newPID)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	standintest.WaitGone(t, fourth.PID, "the stand-in stops with its plugin")
	if !strings.Contains(logs.String(), "exiting on terminated") {
		t.Errorf("the stand-in was not stopped by SIGTERM; host log:\n%s", logs.Tail(4000))
	}
}
