package fabric

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	libmodel "github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ovsplane/ovsplane/overlay/fabric/model"
)

// watchRecheck bounds how long WaitRouteVersion trusts the monitor without looking at the
// cache again (a reconnect repopulates the cache; this also covers a missed wakeup).
const watchRecheck = time.Second

// watcher is the Fabric_Global monitor behind WaitRouteVersion.
type watcher struct {
	mu      sync.Mutex
	started bool          // the monitor is set up
	hooked  bool          // the cache event handler is added
	changed chan struct{} // closed and replaced on every Fabric_Global event
}

// kick wakes every waiter.
func (w *watcher) kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
}

// WaitRouteVersion blocks until the newest published route version is above `above` and
// returns it, or until ctx ends. The first call sets up an OVSDB monitor of Fabric_Global
// (libovsdb re-establishes it after a reconnect), so waiting costs the server no polling:
// this is how many agents learn of a new version from one server or relay, as OVN's
// ovn-controllers do from the southbound database.
func (c *Client) WaitRouteVersion(ctx context.Context, above int64) (int64, error) {
	if err := c.startWatch(ctx); err != nil {
		return 0, err
	}
	for {
		c.watch.mu.Lock()
		ch := c.watch.changed
		c.watch.mu.Unlock()
		if v := c.cachedRouteVersion(); v > above {
			return v, nil
		}
		t := time.NewTimer(watchRecheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("fabric: wait for a route version above %d: %w", above, ctx.Err())
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// startWatch sets up the monitor once.
func (c *Client) startWatch(ctx context.Context) error {
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	if c.watch.started {
		return nil
	}
	if !c.watch.hooked {
		c.watch.changed, c.watch.hooked = make(chan struct{}), true
		c.c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
			AddFunc: func(table string, _ libmodel.Model) {
				if table == tableGlobal {
					c.watch.kick()
				}
			},
			UpdateFunc: func(table string, _, _ libmodel.Model) {
				if table == tableGlobal {
					c.watch.kick()
				}
			},
		})
	}
	if _, err := c.c.Monitor(ctx, c.c.NewMonitor(client.WithTable(&model.FabricGlobal{}))); err != nil {
		return fmt.Errorf("fabric: monitor %s: %w", tableGlobal, err)
	}
	c.watch.started = true
	return nil
}

// cachedRouteVersion reads route_version from the monitor's cache (0 when empty).
func (c *Client) cachedRouteVersion() int64 {
	tc := c.c.Cache()
	if tc == nil {
		return 0
	}
	rc := tc.Table(tableGlobal)
	if rc == nil {
		return 0
	}
	var v int64
	for _, m := range rc.RowsShallow() {
		if g, ok := m.(*model.FabricGlobal); ok {
			v = max(v, int64(g.RouteVersion))
		}
	}
	return v
}
