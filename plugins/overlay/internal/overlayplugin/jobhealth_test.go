package overlayplugin

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestStoppedPartInHealth: an agent job whose prober stops (its UDP port is taken, so every
// run fails at once) is restarted with backoff and Health names the job, the part and the
// error, through the fake host against a real fabric database (a 3-member OVSDB cluster).
func TestStoppedPartInHealth(t *testing.T) {
	cl := lab.StartOVSDBCluster(t, "../../../../overlay/fabric/schema/fabric.ovsschema")
	taken, err := net.ListenUDP("udp", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.LocalAddr().(*net.UDPAddr).Port
	h, _ := newHost(t)
	cfg := agentJSON(t, func(m map[string]any) {
		m["fabric_remotes"] = cl.Endpoints()
		m["probe"] = map[string]any{"port": port}
	})
	if _, err := h.StartJob(api.Job{Name: "agent", Type: JobAgent, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, time.Minute, "Health naming the stopped prober", func(context.Context) error {
		hl, err := h.Health()
		if err != nil {
			return err
		}
		if hl.State != api.HealthDegraded || !strings.Contains(hl.Message, "job agent: prober stopped (listen: ") ||
			!strings.Contains(hl.Message, "address already in use") {
			return fmt.Errorf("health %v: %s", hl.State, hl.Message)
		}
		return nil
	})
}

// TestSuperviseRestarts: a part that keeps failing is run again (with backoff), its last
// error and restart count are reported, and supervise returns once ctx ends.
func TestSuperviseRestarts(t *testing.T) {
	j := &job{name: "x"}
	ctx, cancel := context.WithCancel(t.Context())
	runs := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.supervise(ctx, slog.New(slog.DiscardHandler), "agent", func(context.Context) error {
			runs++
			if runs == 3 {
				cancel()
				return nil
			}
			return fmt.Errorf("boom %d", runs)
		})
	}()
	<-done
	if runs != 3 {
		t.Fatalf("%d runs, want 3 (two failures restarted, then ctx ended)", runs)
	}
	j.mu.Lock()
	probs := j.partProblems()
	j.mu.Unlock()
	if len(probs) != 1 || probs[0] != "job x: agent stopped (boom 2); restarted 2 times" {
		t.Errorf("problems %q", probs)
	}
}
