package writer

import (
	"context"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb"
)

// The watchers' door waits for the turn like every door, gives up with its context while it
// waits, sends nothing for no change, and writes a plugin's key (recorded for the plugin) once
// the turn is free.
func TestInterfaceConfigDoorTakesTheTurn(t *testing.T) {
	ctx, w, db := newWriter(t)
	if _, err := w.EnsurePort(ctx, nil, "br0", internalPort("p1")); err != nil {
		t.Fatal(err)
	}
	before := db.txns.Load()
	if err := w.InterfaceConfig(ctx, "dsa", nil); err != nil || db.txns.Load() != before {
		t.Fatalf("no change: %v, %d transactions", err, db.txns.Load()-before)
	}
	change := []ovsdb.InterfaceConfig{{Interface: "p1", Set: map[string]string{"dma": "on"}}}
	inPass, release := make(chan struct{}), make(chan struct{})
	passDone := make(chan error, 1)
	go func() {
		_, err := w.Pass(ctx, true, func(context.Context) error {
			close(inPass)
			<-release
			return nil
		})
		passDone <- err
	}()
	<-inPass
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.InterfaceConfig(cctx, "dsa", change); err == nil || db.txns.Load() != before {
		t.Fatalf("with its context ended while the turn was held: %v, %d transactions", err, db.txns.Load()-before)
	}
	done := make(chan error, 1)
	go func() { done <- w.InterfaceConfig(ctx, "dsa", change) }()
	time.Sleep(quiet)
	if n := db.txns.Load() - before; n != 0 {
		t.Fatalf("%d transactions while a pass held the turn", n)
	}
	close(release)
	if err := <-passDone; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	eventually(t, "p1's other_config written", func() bool {
		tags, _ := db.Tags("Interface", "p1")
		return tags.Get(ovsdb.InterfaceKeysPrefix+"dsa") == "dma"
	})
}
