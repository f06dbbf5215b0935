package vswitchd

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// SwitchProbe reports whether an ovs-vswitchd (Open vSwitch's switch daemon, not ovsplaned)
// serves the database. ok=false means the probe could not tell (server unreachable, or a
// server without locks such as the embedded one): the Daemon then changes nothing.
type SwitchProbe func(ctx context.Context) (alive, ok bool)

// OVSVswitchdLockProbe returns a SwitchProbe that asks the OVSDB server at endpoints whether
// anyone holds ovs-vswitchd's lock (dbcmd.VswitchdLock), on a connection of its own that it
// redials after errors. The returned close releases the connection.
//
// It uses package ovsdb/dbcmd, not the daemon's *ovsdb.Client, because asking about a lock
// takes the RFC 7047 "lock"/"unlock" methods, which libovsdb's client (under package ovsdb)
// does not offer; dbcmd is a plain JSON-RPC session that can send them. A connection of its
// own is needed anyway: a lock request on the daemon's session would be answered for that
// session, and the probe must not disturb the monitor the daemon's cache follows.
func OVSVswitchdLockProbe(endpoints []string, tls *dbcmd.TLSFiles) (probe SwitchProbe, close func()) {
	var mu sync.Mutex
	var conn *dbcmd.Conn
	probe = func(ctx context.Context) (bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		if conn == nil {
			c, err := dbcmd.Dial(ctx, strings.Join(endpoints, ","), dbcmd.DialOptions{TLS: tls})
			if err != nil {
				return false, false
			}
			conn = c
		}
		held, err := conn.LockHeld(ctx, dbcmd.VswitchdLock)
		if err != nil {
			var rpc *dbcmd.RPCError
			if !errors.As(err, &rpc) { // transport error: redial next time
				conn.Close()
				conn = nil
			}
			return false, false
		}
		return held, true
	}
	close = func() {
		mu.Lock()
		defer mu.Unlock()
		if conn != nil {
			conn.Close()
			conn = nil
		}
	}
	return probe, close
}

// switchLiveness is what the Daemon knows of ovs-vswitchd's life. It owns the polling of a
// SwitchProbe and the last verdict; it tells the reconciler (setDown) when the verdict
// changes. Its methods are safe for concurrent use.
type switchLiveness struct {
	probe   SwitchProbe
	every   time.Duration
	log     *slog.Logger
	setDown func(why string) // reconcile.Reconciler.SetDown
	onUp    func()           // called when ovs-vswitchd is seen running again; may be nil

	mu   sync.Mutex
	down string // why ovs-vswitchd is known not to run; "" while it runs or nobody can tell
}

// run polls the probe every l.every until ctx ends. While ovs-vswitchd is known to be down,
// every interface's status is an error saying so; when it is back, the statuses follow OVSDB
// again.
func (l *switchLiveness) run(ctx context.Context) {
	down := false
	for {
		pctx, cancel := context.WithTimeout(ctx, l.every)
		alive, ok := l.probe(pctx)
		cancel()
		if ok && alive == down {
			down = !alive
			why := ""
			if down {
				why = "ovs-vswitchd is not running (nobody holds its OVSDB lock " + dbcmd.VswitchdLock + ")"
				l.log.Warn("ovs-vswitchd is not running (nobody holds its OVSDB lock); interfaces are not set up until it is back")
			} else {
				l.log.Info("ovs-vswitchd is running again")
			}
			l.mu.Lock()
			l.down = why
			l.mu.Unlock()
			l.setDown(why)
			if !down && l.onUp != nil {
				l.onUp()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(l.every):
		}
	}
}

// downReason returns why ovs-vswitchd is known not to run, "" while it runs or nobody can tell.
func (l *switchLiveness) downReason() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down
}
