package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/dsa/internal/dsaplugin"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// killConfig is the plugin configuration of the kill -9 test: dsa0 with two work queues.
func killConfig(sim string) map[string]any {
	return map[string]any{"simulate": sim, "devices": []any{map[string]any{"dsa": "dsa0", "wqs": map[string]any{"count": 2}}}}
}

// writesUntil returns how many sysfs writes Apply makes on the simulated kernel in dir for
// killConfig, up to and including the first step whose path ends with suffix (0: none).
func writesUntil(t *testing.T, dir, suffix string) (upTo, total int) {
	t.Helper()
	sim, err := simidxd.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := dsa.New(dsa.Config{FS: sim})
	if err != nil {
		t.Fatal(err)
	}
	req := dsa.Request{Devices: []dsa.DeviceRequest{{Device: "dsa0", WQs: dsa.WQRequest{Count: 2}}}}
	if err := req.Normalize(""); err != nil {
		t.Fatal(err)
	}
	plan, err := h.Plan(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.Devices {
		for _, s := range d.Steps {
			if s.Op != dsa.OpWrite {
				continue
			}
			total++
			if upTo == 0 && strings.HasSuffix(s.Path, suffix) {
				upTo = total
			}
		}
	}
	return upTo, total
}

// simAttr reads an attribute of the simulated kernel in dir ("" when absent).
func simAttr(dir, p string) string {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// converged says whether dsa0 of the simulated kernel in dir is as killConfig asks: enabled,
// with wq0.0 and wq0.1 enabled user queues named for DPDK, each with its device node.
func converged(dir string) error {
	if s := simAttr(dir, "sys/bus/dsa/devices/dsa0/state"); s != "enabled" {
		return fmt.Errorf("dsa0 state %q", s)
	}
	for _, wq := range []string{"wq0.0", "wq0.1"} {
		base := "sys/bus/dsa/devices/" + wq + "/"
		if s, ty, n := simAttr(dir, base+"state"), simAttr(dir, base+"type"), simAttr(dir, base+"name"); s != "enabled" || ty != "user" || !strings.HasPrefix(n, "dpdk_") {
			return fmt.Errorf("%s: state %q type %q name %q", wq, s, ty, n)
		}
		if _, err := os.Stat(filepath.Join(dir, "dev", "dsa", wq)); err != nil {
			return fmt.Errorf("%s: %w", wq, err)
		}
	}
	return nil
}

// TestKill9DuringApply runs the real plugin binary under ovsplane's plugin host on a
// simulated SPR host and kills it with SIGKILL in the middle of Configure's Apply — through
// the PauseEnv testing hook, which stops the plugin after its K-th write to the simulated
// kernel — once right after the first write (the device barely touched) and once right after
// dsa0 is bound to idxd but before its work queues are (half-bound). Each time the host
// restarts the plugin, whose Configure converges: dsa0 and both work queues enabled, device
// nodes present, nothing left half-bound; and the plugin reports healthy and prepared.
func TestKill9DuringApply(t *testing.T) {
	pluginDir := testkit.ShortTempDir(t, "dsaplugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-dsa")
	for _, c := range []struct {
		name   string
		suffix string // pause after the write to the path ending so
		check  func(dir string) error
	}{
		{"after the first write", "", func(dir string) error {
			if s := simAttr(dir, "sys/bus/dsa/devices/dsa0/state"); s != "disabled" {
				return fmt.Errorf("dsa0 %q, want still disabled", s)
			}
			return nil
		}},
		{"device bound, queues not", "drivers/idxd/bind", func(dir string) error {
			if s, w := simAttr(dir, "sys/bus/dsa/devices/dsa0/state"), simAttr(dir, "sys/bus/dsa/devices/wq0.0/state"); s != "enabled" || w != "disabled" {
				return fmt.Errorf("dsa0 %q wq0.0 %q, want a half-bound device", s, w)
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sim := t.TempDir()
			if err := simidxd.Write(sim, "spr"); err != nil {
				t.Fatal(err)
			}
			k, total := writesUntil(t, sim, "drivers/idxd/bind")
			if c.suffix == "" {
				k = 1
			}
			if k == 0 || k >= total {
				t.Fatalf("the plan's %d writes have no pause point for %q (at %d)", total, c.suffix, k)
			}
			marker := filepath.Join(t.TempDir(), "paused")
			logs := &testkit.LogBuffer{}
			h, err := host.New(host.Options{
				PluginDir: pluginDir, DataDir: testkit.ShortTempDir(t, "dsadata"),
				Logger:  slog.New(slog.NewTextHandler(logs, nil)),
				Environ: append(os.Environ(), dsaplugin.PauseEnv+"="+strconv.Itoa(k)+":"+marker),
				// Long enough that the paused Configure is killed, not timed out.
				CallTimeout: time.Minute, HealthInterval: 200 * time.Millisecond,
				Facts: func(context.Context) (api.HostFacts, error) { return sdktest.DefaultFacts(), nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close(context.Background()) })
			started := make(chan error, 1)
			go func() {
				started <- h.Start(t.Context(), []model.Plugin{{Name: "dsa", Path: "ovsplane-plugin-dsa", SHA256: sum,
					Config: killConfig(sim), Env: []string{dsaplugin.PauseEnv}}})
			}()
			var pid int
			testkit.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
				b, err := os.ReadFile(marker)
				if err != nil {
					return fmt.Errorf("the plugin did not pause after write %d: %w\n%s", k, err, logs.Tail(2000))
				}
				pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
				return err
			})
			if err := c.check(sim); err != nil {
				t.Fatalf("at the pause after write %d of %d: %v", k, total, err)
			}
			if err := converged(sim); err == nil {
				t.Fatal("the device is already converged at the pause: the kill would prove nothing")
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := <-started; err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
				st := h.Plugins()[0]
				if st.State != host.StateRunning || st.PID == pid || st.PID == 0 {
					return fmt.Errorf("plugin %s pid %d (killed %d): %s", st.State, st.PID, pid, st.LastError)
				}
				if !strings.Contains(st.Health.Message, "2 work queues") {
					return fmt.Errorf("health %+v", st.Health)
				}
				return nil
			})
			if err := converged(sim); err != nil {
				t.Errorf("after the restart: %v\n%s", err, logs.Tail(4000))
			}
		})
	}
}
