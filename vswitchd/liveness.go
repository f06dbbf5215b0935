package vswitchd

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// VswitchdProbe reports whether an ovs-vswitchd serves the database. ok=false means the probe
// could not tell (server unreachable, or a server without locks such as the embedded one): the
// Daemon then changes nothing.
type VswitchdProbe func(ctx context.Context) (alive, ok bool)

// LockProbe returns a VswitchdProbe that asks the OVSDB server at endpoints whether anyone
// holds ovs-vswitchd's lock (dbcmd.VswitchdLock), on a connection of its own that it redials
// after errors. The returned close releases the connection.
func LockProbe(endpoints []string, tls *dbcmd.TLSFiles) (probe VswitchdProbe, close func()) {
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

// watchVswitchd polls Options.VswitchdProbe every Options.ProbeInterval until ctx ends. While
// ovs-vswitchd is known to be down, every interface's status is an error saying so; when it is
// back, the statuses follow OVSDB again.
func (d *Daemon) watchVswitchd(ctx context.Context) {
	every := d.opts.ProbeInterval
	if every <= 0 {
		every = time.Second
	}
	down := false
	for {
		pctx, cancel := context.WithTimeout(ctx, every)
		alive, ok := d.opts.VswitchdProbe(pctx)
		cancel()
		if ok && alive == down {
			down = !alive
			why := ""
			if down {
				why = "ovs-vswitchd is not running (nobody holds its OVSDB lock " + dbcmd.VswitchdLock + ")"
				d.log.Warn("ovs-vswitchd is not running (nobody holds its OVSDB lock); interfaces are not set up until it is back")
			} else {
				d.log.Info("ovs-vswitchd is running again")
			}
			d.live.set(why)
			d.rec.SetDown(why)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// liveness is what the Daemon knows of ovs-vswitchd's life, for Health.
type liveness struct {
	mu   sync.Mutex
	down string // why ovs-vswitchd is known not to run; "" while it runs or nobody can tell
}

func (l *liveness) set(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = why
}

func (l *liveness) get() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down
}

// degraded returns Health.Degraded: OVSDB not connected, ovs-vswitchd known not to run, then
// Options.Degraded's lines.
func (d *Daemon) degraded(connected bool) []string {
	var out []string
	if !connected {
		out = append(out, "not connected to OVSDB (reconnecting)")
	}
	if why := d.live.get(); why != "" {
		out = append(out, why)
	}
	if d.opts.Degraded != nil {
		out = append(out, d.opts.Degraded()...)
	}
	return out
}
