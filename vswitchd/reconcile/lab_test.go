package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// TestLabConvergesBesideForeignPort runs against a real ovsdb-server and a dummy ovs-vswitchd: the
// reconciler converges a small config while ovs-vsctl adds a foreign port to its bridge, and the
// foreign port survives.
func TestLabConvergesBesideForeignPort(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{db.Endpoint},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	internal := func(name string) model.Port {
		return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: "internal"}}}
	}
	cfg := config.Config{Bridges: []model.Bridge{{Name: "br0", Ports: []model.Port{internal("p1")}}}}
	r := reconcile.New(c, cfg.Desired(), reconcile.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: time.Second})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() { stop(); <-done }()

	ready := func(keys ...string) func(context.Context) error {
		return func(context.Context) error {
			for _, k := range keys {
				s, ok := statusOf(r, k)
				if !ok || s.State != model.StateReady {
					return fmt.Errorf("%s: %+v", k, s)
				}
			}
			return nil
		}
	}
	lab.WaitFor(t, 60*time.Second, "br0 and p1 ready", ready("bridge/br0", "interface/p1"))

	// A foreign port added while the reconciler applies a change.
	cfg.Bridges[0].Ports = append(cfg.Bridges[0].Ports, internal("p2"))
	r.Update(cfg.Desired())
	db.Vsctl(t, "add-port", "br0", "foreign0", "--", "set", "Interface", "foreign0", "type=internal")
	lab.WaitFor(t, 60*time.Second, "p1 and p2 ready", ready("interface/p1", "interface/p2"))
	lab.WaitFor(t, 60*time.Second, "ports of br0", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "list-ports", "br0")
		if err != nil {
			return err
		}
		if got := strings.Fields(out); strings.Join(got, " ") != "foreign0 p1 p2" {
			return fmt.Errorf("ports %v, want foreign0 p1 p2", got)
		}
		return nil
	})
	if got := db.Get(t, "Port", "foreign0", "external_ids"); strings.Contains(got, ovsdb.OwnerKey) {
		t.Errorf("foreign port was tagged: %s", got)
	}
	// Dropping p2 prunes it and still leaves foreign0 alone.
	cfg.Bridges[0].Ports = cfg.Bridges[0].Ports[:1]
	r.Update(cfg.Desired())
	lab.WaitFor(t, 60*time.Second, "p2 pruned", func(ctx context.Context) error {
		out, _, err := db.VsctlErr(ctx, "list-ports", "br0")
		if err != nil {
			return err
		}
		if got := strings.Fields(out); strings.Join(got, " ") != "foreign0 p1" {
			return fmt.Errorf("ports %v, want foreign0 p1", got)
		}
		return nil
	})
}
