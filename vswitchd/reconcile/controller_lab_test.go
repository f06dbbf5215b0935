package reconcile_test

import (
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// fakeController is the smallest OpenFlow controller ovs-vswitchd stays connected to: it
// answers the switch's hello with an OpenFlow 1.0 hello and its echo requests with replies.
type fakeController struct {
	ln net.Listener
	wg sync.WaitGroup
}

func startFakeController(t *testing.T) *fakeController {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeController{ln: ln}
	var conns []net.Conn
	var mu sync.Mutex
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			f.wg.Add(1)
			go func() { defer f.wg.Done(); serveOpenFlow(c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeController) target() string { return "tcp:" + f.ln.Addr().String() }

// serveOpenFlow speaks the OpenFlow 1.0 handshake on c until it closes.
func serveOpenFlow(c net.Conn) {
	const ofp10, hello, echoRequest, echoReply = 1, 0, 2, 3
	msg := func(typ byte, xid uint32, body []byte) []byte {
		b := make([]byte, 8, 8+len(body))
		b[0], b[1] = ofp10, typ
		binary.BigEndian.PutUint16(b[2:], uint16(8+len(body)))
		binary.BigEndian.PutUint32(b[4:], xid)
		return append(b, body...)
	}
	if _, err := c.Write(msg(hello, 1, nil)); err != nil {
		return
	}
	hdr := make([]byte, 8)
	for {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(hdr[2:]))
		if n < 8 {
			return
		}
		body := make([]byte, n-8)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if hdr[1] == echoRequest {
			if _, err := c.Write(msg(echoReply, binary.BigEndian.Uint32(hdr[4:]), body)); err != nil {
				return
			}
		}
	}
}

// controllerRows returns target → "is_connected external_ids status" of every Controller row.
func controllerRows(ctx context.Context, db *lab.OVSDB) (map[string]string, error) {
	out, _, err := db.VsctlErr(ctx, "--format=csv", "--data=bare", "--no-headings",
		"--columns=target,is_connected,external_ids,status", "list", "Controller")
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", out, err)
	}
	rows := map[string]string{}
	for _, f := range recs {
		if len(f) != 4 {
			return nil, fmt.Errorf("controller row %q: want 4 columns", f)
		}
		rows[f[0]] = strings.Join(f[1:], " ")
	}
	return rows, nil
}

// TestLabControllers: a configured bridge's controllers become Controller rows owned by
// ovsplane and referenced by Bridge.controller, with its fail_mode; ovs-vswitchd connects to
// the live one (is_connected) and reports the refused one's error in its status; removing a
// target from the desired state removes only that row, leaving a controller ovs-vsctl added;
// a controller removed behind the reconciler's back comes back.
func TestLabControllers(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	live := startFakeController(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "tcp:" + closed.Addr().String()
	closed.Close() // nothing listens there: connections are refused

	br := func(targets ...string) model.Bridge {
		return model.Bridge{Name: "br0", FailMode: "secure", Controllers: targets, Ports: []model.Port{internalPort("p1")}}
	}
	r := labReconciler(t, db, desired(br(live.target(), dead)))
	labState(t, r, "interface/p1", "ready")
	if got := db.Get(t, "Bridge", "br0", "fail_mode"); got != "secure" {
		t.Errorf("br0 fail_mode %s, want secure", got)
	}
	lab.WaitFor(t, 60*time.Second, "ovs-vswitchd connected to the live controller, refused by the dead one", func(ctx context.Context) error {
		rows, err := controllerRows(ctx, db)
		if err != nil {
			return err
		}
		for _, target := range []string{live.target(), dead} {
			if !strings.Contains(rows[target], ovsdb.OwnerKey+"=ovsplane") {
				return fmt.Errorf("controller %s: %q, want a row owned by ovsplane (rows %v)", target, rows[target], rows)
			}
		}
		if !strings.HasPrefix(rows[live.target()], "true ") || !strings.Contains(rows[live.target()], "state=ACTIVE") {
			return fmt.Errorf("live controller not connected: %q", rows[live.target()])
		}
		if !strings.Contains(rows[dead], "last_error=Connection refused") {
			return fmt.Errorf("dead controller status lacks the refusal: %q", rows[dead])
		}
		return nil
	})
	if n := len(strings.Fields(db.Get(t, "Bridge", "br0", "controller"))); n != 2 {
		t.Errorf("br0 refers to %d controllers, want 2", n)
	}

	// Someone adds a controller of their own; the desired state drops the dead target.
	foreign := "tcp:127.0.0.1:1"
	db.Vsctl(t, "--", "--id=@c", "create", "Controller", "target=\""+foreign+"\"", "--", "add", "Bridge", "br0", "controller", "@c")
	r.Update(desired(br(live.target())))
	wantTargets := func(want ...string) func(context.Context) error {
		return func(ctx context.Context) error {
			rows, err := controllerRows(ctx, db)
			if err != nil {
				return err
			}
			var got []string
			for target := range rows {
				got = append(got, target)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				return fmt.Errorf("controllers %v, want %v", got, want)
			}
			out, _, err := db.VsctlErr(ctx, "get", "Bridge", "br0", "controller")
			if err != nil {
				return err
			}
			if n := len(strings.Fields(strings.Trim(out, "[]"))); n != len(want) {
				return fmt.Errorf("br0 refers to %d controllers (%s), want %d", n, out, len(want))
			}
			return nil
		}
	}
	lab.WaitFor(t, 60*time.Second, "only the dead target's row removed", wantTargets(live.target(), foreign))
	rows, err := controllerRows(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rows[foreign], ovsdb.OwnerKey) {
		t.Errorf("foreign controller was tagged: %q", rows[foreign])
	}

	// An operator clears the bridge's controllers: ovsplane's comes back, the foreign one was theirs to drop.
	db.Vsctl(t, "del-controller", "br0")
	lab.WaitFor(t, 60*time.Second, "owned controller recreated", wantTargets(live.target()))
	if errors.Is(r.LastError(), ovsdb.ErrNotOwned) {
		t.Errorf("last pass refused something: %v", r.LastError())
	}
}
