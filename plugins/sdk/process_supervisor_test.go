package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// TestSupervisor: Start is idempotent for the same command and restarts on another; Stop of
// an unknown name is nil; Stats samples the selected processes; more than MaxProcesses is
// refused; Close stops everything and refuses further starts.
func TestSupervisor(t *testing.T) {
	log, _ := logTo(t)
	s := sdk.NewSupervisor(sdk.SupervisorOptions{Logger: log, MaxProcesses: 2})
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx := t.Context()
	m1, m2 := marker(t)+"1", marker(t)+"2"
	sleep := func(name, arg string) sdk.ProcessOptions {
		return sdk.ProcessOptions{Name: name, Command: sdk.Command{Path: "/bin/sleep", Args: []string{arg}}}
	}
	status, err := s.Start(ctx, sleep("a", m1))
	if err != nil || !strings.HasPrefix(status, "started pid ") {
		t.Fatalf("start: %q %v", status, err)
	}
	a, _ := s.Get("a")
	pid := a.Stats().PID
	if status, err = s.Start(ctx, sleep("a", m1)); err != nil || !strings.HasPrefix(status, "running pid ") {
		t.Errorf("second start: %q %v", status, err)
	}
	if again, _ := s.Get("a"); again != a || again.Stats().PID != pid {
		t.Errorf("the same command was restarted")
	}
	if _, err = s.Start(ctx, sleep("a", m2)); err != nil {
		t.Fatal(err)
	}
	if alive(pid) || len(withArg(t, m2)) != 1 {
		t.Errorf("changed command: old pid %d alive %v, new %v", pid, alive(pid), withArg(t, m2))
	}
	if _, err = s.Start(ctx, sleep("b", m1)); err != nil {
		t.Fatal(err)
	}
	if _, err = s.Start(ctx, sleep("c", m1)); api.CodeOf(err) != api.FailedPrecondition {
		t.Errorf("third process: %v", err)
	}
	var samples []api.StatsSample
	errEnough := errors.New("enough")
	err = s.Stats(ctx, api.StatsRequest{Jobs: []string{"b", "zzz"}, IntervalMillis: 1}, func(sm api.StatsSample) error {
		samples = append(samples, sm)
		if len(samples) == 2 {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) || samples[0].Job != "b" || samples[1].Job != "b" || len(samples[0].Metrics) < 7 {
		t.Errorf("stats: %v %+v", err, samples)
	}
	if err := s.Stop(ctx, "nope"); err != nil {
		t.Errorf("stop unknown: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left := append(withArg(t, m1), withArg(t, m2)...); len(left) != 0 || len(s.Names()) != 0 {
		t.Errorf("after Close: %v %v", left, s.Names())
	}
	if _, err := s.Start(ctx, sleep("a", m1)); api.CodeOf(err) != api.Unavailable {
		t.Errorf("start after close: %v", err)
	}
}
