package writer

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// countingDB counts the transactions started on it.
type countingDB struct {
	*ovsdb.Client
	txns atomic.Int64
}

func (c *countingDB) NewTxn(gen int64) *ovsdb.Txn {
	c.txns.Add(1)
	return c.Client.NewTxn(gen)
}

// quiet is how long a door that could write is given to do it before the test concludes it
// was held back.
const quiet = 300 * time.Millisecond

func newWriter(t *testing.T) (context.Context, *Writer, *countingDB) {
	t.Helper()
	ctx, c := ovsdbEnv(t)
	db := &countingDB{Client: c}
	w, err := New(ctx, db, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(ctx) })
	return ctx, w, db
}

func internalPort(name string) model.Port {
	return model.Port{Name: name, Interfaces: []model.Interface{{Name: name, Type: "internal"}}}
}

// While a reconciler's pass holds the turn, the bridge door and the port door start no
// transaction, and a drift pass (wait false) does not run; once the pass ends, both doors
// write.
func TestPassHoldsBackTheOtherDoors(t *testing.T) {
	ctx, w, db := newWriter(t)
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
	before := db.txns.Load()
	bridgeDone, portDone := make(chan error, 1), make(chan error, 1)
	go func() {
		bridgeDone <- w.ApplyBridge(ctx, model.Bridge{Name: "br1", DatapathType: "netdev"}, func(err error) error { return err })
	}()
	go func() {
		_, err := w.EnsurePort(ctx, nil, "br0", internalPort("p1"))
		portDone <- err
	}()
	if ran, err := w.Pass(ctx, false, func(context.Context) error { return nil }); ran || err != nil {
		t.Fatalf("a drift pass ran during another pass (ran %v, %v)", ran, err)
	}
	time.Sleep(quiet)
	if n := db.txns.Load() - before; n != 0 {
		t.Fatalf("%d transactions started while a pass held the turn", n)
	}
	close(release)
	for what, ch := range map[string]chan error{"pass": passDone, "bridge": bridgeDone, "port": portDone} {
		if err := <-ch; err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	if n := db.txns.Load() - before; n != 2 {
		t.Errorf("%d transactions after the pass, want the bridge's and the port batch's", n)
	}
}

// While the bridge door settles its outcome (holding the turn), a port batch starts no
// transaction and a drift pass does not run; a waiting pass runs after both.
func TestBridgeDoorHoldsTheTurnWhileItSettles(t *testing.T) {
	ctx, w, db := newWriter(t)
	settling, release := make(chan struct{}), make(chan struct{})
	bridgeDone := make(chan error, 1)
	go func() {
		bridgeDone <- w.ApplyBridge(ctx, model.Bridge{Name: "br1", DatapathType: "netdev"}, func(err error) error {
			close(settling)
			<-release
			return err
		})
	}()
	<-settling
	before := db.txns.Load()
	portDone := make(chan error, 1)
	go func() {
		_, err := w.EnsurePort(ctx, nil, "br1", internalPort("p1"))
		portDone <- err
	}()
	var passed atomic.Bool
	passDone := make(chan error, 1)
	go func() {
		_, err := w.Pass(ctx, true, func(context.Context) error { passed.Store(true); return nil })
		passDone <- err
	}()
	if ran, _ := w.Pass(ctx, false, func(context.Context) error { return nil }); ran {
		t.Fatal("a drift pass ran while the bridge door held the turn")
	}
	time.Sleep(quiet)
	if n := db.txns.Load() - before; n != 0 || passed.Load() {
		t.Fatalf("%d transactions started (pass ran: %v) while the bridge door settled", n, passed.Load())
	}
	close(release)
	for what, ch := range map[string]chan error{"bridge": bridgeDone, "port": portDone, "pass": passDone} {
		if err := <-ch; err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	if !passed.Load() {
		t.Error("the waiting pass never ran")
	}
}

// A door waiting for the turn gives up when its context ends, having written nothing.
func TestWaitingDoorHonoursItsContext(t *testing.T) {
	ctx, w, db := newWriter(t)
	inPass, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = w.Pass(ctx, true, func(context.Context) error { close(inPass); <-release; return nil })
	}()
	defer close(release)
	<-inPass
	before := db.txns.Load()
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	settled := false
	err := w.ApplyBridge(cctx, model.Bridge{Name: "br1"}, func(err error) error { settled = true; return err })
	if err != context.DeadlineExceeded || settled || db.txns.Load() != before {
		t.Fatalf("got %v (settled %v, %d transactions), want the context's error and nothing written", err, settled, db.txns.Load()-before)
	}
}
