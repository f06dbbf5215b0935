package vswitchd

import (
	"context"
	"errors"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb"
)

// DefaultReconnectWait is Options.Commit.ReconnectWait when it is 0: how long a write request
// (ApplyBridge, DeleteBridge, ApplyPort, DeletePort, the batches that carry ports, and the
// reconciler's passes) waits for a lost OVSDB connection to come back, counted from when the
// connection was lost, before failing with ErrUnavailable. Long enough to ride out an
// ovsdb-server restart, short enough that a caller is told to retry instead of being held.
const DefaultReconnectWait = 5 * time.Second

// awaitOVSDB is the first step of every write request: while the OVSDB connection is down it
// holds the request until the connection is back, for at most Options.Commit.ReconnectWait
// counted from when the connection was lost, so a request arriving during an outage is
// answered — ErrUnavailable wrapping an *ovsdb.DisconnectedError that names the endpoints and
// says nothing was applied — instead of queueing behind the batch the outage holds. It returns
// nil at once while connected, and a classified ctx error when ctx ends first.
func (d *Daemon) awaitOVSDB(ctx context.Context, kind, name string) error {
	if err := d.c.AwaitConnected(ctx, d.opts.Commit.ReconnectWait); err != nil {
		return classify(kind, name, err)
	}
	return nil
}

// notSent reports errors that say the transaction certainly never reached OVSDB: the
// connection was down for the whole reconnect wait and no attempt was in flight.
func notSent(err error) bool {
	var de *ovsdb.DisconnectedError
	return errors.As(err, &de) && !de.Unknown
}

// disconnected reports an *ovsdb.DisconnectedError: the connection stayed down for the whole
// reconnect wait (the error says whether the outcome is unknown or nothing was sent).
func disconnected(err error) bool {
	var de *ovsdb.DisconnectedError
	return errors.As(err, &de)
}
