package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// A batch held while ovsdb-server goes down, and the requests queued behind it, all end with the
// port door's *ovsdb.DisconnectedError (nothing sent) once the connection has been down for
// CommitOptions.ReconnectWait — the queued batch at once, since the wait counts from the loss —
// long before their callers' deadlines (they used to be held until then). Once the server is
// back the Batcher commits again.
func TestBatchesWhileOVSDBDownEndAfterReconnectWait(t *testing.T) {
	srv := ovsdbtest.Start(t)
	ovsdbtest.StartOVSVswitchd(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // far beyond the wait
	defer cancel()
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{srv.Endpoint()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, ovsdb.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	gc := &gatedCommitter{portDoor: &portDoor{db: c, gen: func() int64 { return 1 },
		opts: ovsdb.CommitOptions{ReconnectWait: 300 * time.Millisecond}}, gate: make(chan struct{})}
	b := startPorts(t, ctx, gc, batch.Options[PortRequest]{})
	req := func(name string) PortRequest {
		return PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: name,
			Interfaces: []model.Interface{{Name: name, Type: "internal"}}}}}
	}
	errs := make([]error, 5)
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = b.Submit(ctx, req("p0")) }) // held at the gate
	for gc.commits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < len(errs); i++ { // queued behind p0's batch
		wg.Go(func() { _, errs[i] = b.Submit(ctx, req(fmt.Sprintf("p%d", i))) })
	}
	srv.Stop()
	for c.Connected() {
		time.Sleep(10 * time.Millisecond)
	}
	close(gc.gate)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("requests held until the callers' deadline: %v", errs)
	}
	for i, err := range errs {
		var de *ovsdb.DisconnectedError
		if !errors.As(err, &de) || de.Unknown {
			t.Errorf("p%d while OVSDB is down: %v, want an *ovsdb.DisconnectedError saying nothing was sent", i, err)
		}
	}
	if err := srv.Serve(ctx); err != nil {
		t.Fatal(err)
	}
	for !c.Connected() { // until the client is back, writes still fail at once
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := b.Submit(ctx, req("after")); err != nil {
		t.Fatalf("after the server came back: %v", err)
	}
}
