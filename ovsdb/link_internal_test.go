package ovsdb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/model"
)

// While the server is down, a Commit with ReconnectWait ends with a *DisconnectedError that
// says nothing was sent, long before the caller's own deadline (the old behaviour held it until
// that deadline); a Commit starting later in the outage fails the same way; the cache can be
// read meanwhile; once the server is back, commits go through again.
func TestReconnectWaitBoundsCommitWhileDown(t *testing.T) {
	c, srv := dialInternal(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // far longer than the wait
	defer cancel()
	opts := CommitOptions{NoWait: true, ReconnectWait: 300 * time.Millisecond}
	srv.Stop()
	eventuallyT(t, func() bool { return !c.Connected() }, "the client did not notice the outage")
	for i := range 2 {
		_, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, opts)
		var de *DisconnectedError
		switch {
		case !errors.As(err, &de):
			t.Fatalf("commit %d while down: %v, want a *DisconnectedError", i, err)
		case ctx.Err() != nil:
			t.Fatalf("commit %d returned at the caller's deadline, not after ReconnectWait: %v", i, err)
		case !errors.Is(err, ErrNotConnected):
			t.Errorf("commit %d: %v does not match ErrNotConnected", i, err)
		case de.Unknown:
			t.Errorf("commit %d: outcome unknown, but nothing was sent: %v", i, err)
		case !strings.Contains(err.Error(), srv.Endpoint()) || !strings.Contains(err.Error(), "nothing was applied"):
			t.Errorf("commit %d: message %q does not name the endpoint %s and say nothing was applied", i, err, srv.Endpoint())
		}
	}
	// Reads of the cache answer during the outage (libovsdb's Get and List wait for a
	// consistent cache, i.e. for the connection: a reconcile pass used to hang in them).
	if _, ok := c.Tags("Bridge", "br0"); ok {
		t.Error("br0 in the cache after refused commits")
	}
	if _, err := c.OwnedGlobal(ctx); err != nil || ctx.Err() != nil {
		t.Errorf("OwnedGlobal while down: %v (caller's context: %v)", err, ctx.Err())
	}
	if err := srv.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Back: the wait is counted per outage, so a commit goes through again.
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, CommitOptions{NoWait: true, ReconnectWait: 20 * time.Second}); err != nil {
		t.Fatalf("commit after the server came back: %v", err)
	}
}

// The server goes away just as the transaction is sent: Commit gives up after ReconnectWait and
// must never claim that nothing was applied for a transaction that was committed — an attempt
// sent on the lost connection makes the outcome unknown. After the restart, a commit that was
// reported not sent has indeed left nothing.
func TestReconnectWaitInFlightIsNeverReportedUnapplied(t *testing.T) {
	for i := range 5 {
		c, srv := dialInternal(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		fired := false
		c.beforeTransact = func() {
			if !fired {
				fired = true
				srv.Stop()
			}
		}
		_, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, CommitOptions{NoWait: true, ReconnectWait: 300 * time.Millisecond})
		var de *DisconnectedError
		if !errors.As(err, &de) || ctx.Err() != nil {
			cancel()
			t.Fatalf("run %d: %v, want a *DisconnectedError before the caller's deadline", i, err)
		}
		if de.Unknown && !strings.Contains(err.Error(), "outcome is unknown") {
			t.Errorf("run %d: unknown outcome not said: %v", i, err)
		}
		if err := srv.Serve(context.Background()); err != nil {
			cancel()
			t.Fatal(err)
		}
		eventuallyT(t, c.Connected, "no reconnection")
		other := srv.Client(t)
		res, terr := other.Transact(ctx, libovsdb.Operation{Op: libovsdb.OperationSelect, Table: "Bridge",
			Where: []libovsdb.Condition{{Column: "name", Function: libovsdb.ConditionEqual, Value: "br0"}}})
		if terr != nil || len(res) != 1 {
			cancel()
			t.Fatalf("select br0: %v %v", res, terr)
		}
		rows := res[0].Rows
		t.Logf("run %d: unknown=%v, br0 rows after restart: %d", i, de.Unknown, len(rows))
		if !de.Unknown && len(rows) > 0 {
			t.Errorf("run %d: reported not sent, but br0 was committed: %v", i, err)
		}
		cancel()
	}
}
