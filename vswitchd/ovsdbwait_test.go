package vswitchd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd"
)

// While ovsdb-server is down, every write request — ApplyPort and DeletePort (alone and
// concurrently, through the batcher), ApplyBridge, DeleteBridge — ends with ErrUnavailable
// wrapping an *ovsdb.DisconnectedError that says nothing was applied and names the endpoint,
// after the reconnect wait and long before the caller's own deadline (the old behaviour held
// them until that deadline). Once the server is back nothing acknowledged is lost and writes
// go through again.
func TestWritesWhileOVSDBDownAreUnavailable(t *testing.T) {
	e := newEnv(t)
	d, _ := startDaemon(t, e, cfgWithBridge(), nil, func(o *vswitchd.Options) {
		o.Commit.ReconnectWait = 300 * time.Millisecond
	})
	if _, err := d.ApplyBridge(e.Ctx, model.Bridge{Name: "br-api", DatapathType: "netdev"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", internalPort("acked")); err != nil {
		t.Fatal(err)
	}
	e.Srv.Stop()
	waitFor(t, "the daemon noticing the outage", func() bool { return !d.Health(e.Ctx).OVSDBConnected })

	ctx, cancel := context.WithTimeout(e.Ctx, time.Minute) // far longer than the reconnect wait
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		var de *ovsdb.DisconnectedError
		switch {
		case err == nil:
			t.Errorf("%s while OVSDB is down: succeeded", what)
		case ctx.Err() != nil:
			t.Errorf("%s while OVSDB is down returned at the caller's deadline, not after the reconnect wait: %v", what, err)
		case !errors.Is(err, model.ErrUnavailable) || !errors.As(err, &de):
			t.Errorf("%s while OVSDB is down: %v, want ErrUnavailable with an *ovsdb.DisconnectedError", what, err)
		case de.Unknown:
			t.Errorf("%s: outcome unknown, but it was never sent: %v", what, err)
		case !strings.Contains(err.Error(), e.Srv.Endpoint()) || !strings.Contains(err.Error(), "nothing was applied"):
			t.Errorf("%s: %q does not name the endpoint %s and say nothing was applied", what, err, e.Srv.Endpoint())
		}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := d.ApplyPort(ctx, "br-cfg", internalPort(fmt.Sprintf("down%d", i)))
			check(fmt.Sprintf("ApplyPort down%d", i), err)
		})
	}
	wg.Wait()
	check("DeletePort acked", d.DeletePort(ctx, "acked"))
	_, err := d.ApplyBridge(ctx, model.Bridge{Name: "br-down", DatapathType: "netdev"})
	check("ApplyBridge br-down", err)
	check("DeleteBridge br-api", d.DeleteBridge(ctx, "br-api"))

	if err := e.Srv.Serve(e.Ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the daemon reconnecting", func() bool { return d.Health(e.Ctx).OVSDBConnected })
	if _, err := d.ApplyPort(e.Ctx, "br-cfg", internalPort("after")); err != nil {
		t.Fatalf("ApplyPort after the restart: %v", err)
	}
	for _, name := range []string{"acked", "after"} {
		if _, err := d.Port(name); err != nil {
			t.Errorf("port %s after the restart: %v", name, err)
		}
	}
	if _, err := d.Bridge("br-api"); err != nil {
		t.Errorf("bridge br-api after the restart: %v", err)
	}
	for i := range 8 {
		if _, err := d.Port(fmt.Sprintf("down%d", i)); !errors.Is(err, model.ErrNotFound) {
			t.Errorf("port down%d, refused while OVSDB was down: %v, want ErrNotFound", i, err)
		}
	}
}
