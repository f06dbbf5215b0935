//go:build linux

package stripeplugin

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/stripe/fair"
	"github.com/ovsplane/ovsplane/test/lab"
)

// appsTCP is node B's endpoint TCP address, inside its namespace.
const appsTCP = "127.0.0.1:7475"

// TestJobServesApplications: each side's job serves the endpoint (A on its default unix
// socket in the plugin's data dir, B also on TCP inside its namespace). Five applications on
// A send to five on B at once; every message arrives once and in order, and each side's
// stats sample carries the five applications' shares, rates and byte counters (the shares
// equal: Jain over them ≥ 0.999). A sixth client on A's socket is refused a taken name.
func TestJobServesApplications(t *testing.T) {
	tb := newTestbed(t)
	a, b := newSide(t), newSide(t)
	const name = "apps0"
	var cb Config
	if err := json.Unmarshal(tb.config(t, false, "weighted"), &cb); err != nil {
		t.Fatal(err)
	}
	cb.Endpoint.TCP = appsTCP
	cfgB, err := json.Marshal(cb)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		side
		cfg []byte
	}{{a, tb.config(t, true, "weighted")}, {b, cfgB}} {
		status, err := s.h.StartJob(api.Job{Name: name, Type: JobType, Config: s.cfg})
		if err != nil {
			t.Fatal(err)
		}
		if want := "applications at unix:" + filepath.Join(s.h.Facts.DataDir, name+".sock"); !strings.Contains(status, want) {
			t.Errorf("status %q lacks %q", status, want)
		}
	}
	for _, s := range []side{a, b} {
		lab.WaitFor(t, 10*time.Second, "both peers discovered", func(context.Context) error {
			if h, err := s.h.Health(); err != nil || h.State != api.HealthOK {
				return fmt.Errorf("health %+v, %v", h, err)
			}
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dialA := func() *endpoint.Client {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", filepath.Join(a.h.Facts.DataDir, name+".sock"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return endpoint.NewClient(c, false)
	}
	dialB := func() *endpoint.Client {
		var c net.Conn
		if err := tb.b.Do(func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, "tcp", appsTCP)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return endpoint.NewClient(c, false)
	}
	const apps, size, perApp = 5, 8000, 256 << 10
	sendCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	var got [apps]atomic.Int64
	errs := make(chan error, apps)
	start := make(chan struct{})
	for i := range apps {
		snd, rcv := dialA(), dialB()
		id, err := snd.Register(ctx, endpoint.Registration{Name: fmt.Sprint("tx", i), Service: 9, LocalPort: uint16(100 + i), PeerNode: 2, PeerPort: uint16(200 + i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rcv.Register(ctx, endpoint.Registration{Name: fmt.Sprint("rx", i), Service: 9, LocalPort: uint16(200 + i), PeerNode: 1, PeerPort: uint16(100 + i)}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			msg := make([]byte, size)
			<-start
			for n := uint64(0); sendCtx.Err() == nil; n++ {
				binary.BigEndian.PutUint64(msg, n)
				if snd.Send(sendCtx, id, uint32(n), msg) != nil {
					return
				}
			}
		})
		wg.Go(func() {
			for want := uint64(0); ; want++ {
				m, err := rcv.Next(sendCtx)
				if err != nil {
					return
				}
				if m.Type != endpoint.TypeDeliver || len(m.Payload) != size || binary.BigEndian.Uint64(m.Payload) != want {
					errs <- fmt.Errorf("rx%d: message %v of %d bytes numbered %d, want delivery %d of %d bytes", i, m.Type, len(m.Payload), binary.BigEndian.Uint64(m.Payload), want, size)
					return
				}
				got[i].Add(int64(len(m.Payload)))
			}
		})
	}
	// A name taken on the endpoint is refused.
	if _, err := dialA().Register(ctx, endpoint.Registration{Name: "tx0", Service: 9, LocalPort: 999, PeerNode: 2, PeerPort: 1}); err == nil ||
		!strings.Contains(err.Error(), "already registered") {
		t.Errorf("registering a taken name: %v", err)
	}
	close(start)
	lab.WaitFor(t, 90*time.Second, "every application received its share of messages", func(context.Context) error {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		for i := range apps {
			if n := got[i].Load(); n < perApp {
				return fmt.Errorf("rx%d: %d bytes", i, n)
			}
		}
		return nil
	})
	sa, sb := a.sample(t, name), b.sample(t, name)
	stop()
	for _, s := range []sample{sa, sb} {
		if v := s.value(t, "stripe_apps", nil); v != apps {
			t.Errorf("stripe_apps %v, want %d", v, apps)
		}
		if v := s.value(t, "stripe_apps_shown", nil); v != apps {
			t.Errorf("stripe_apps_shown %v, want %d", v, apps)
		}
	}
	var shares, rx []float64
	for i := range apps {
		tx := map[string]string{"app": fmt.Sprint("tx", i), "peer": "2"}
		share := sa.value(t, "stripe_app_share_bytes_per_second", tx)
		if share <= endpoint.MinShare || sa.value(t, "stripe_app_send_bytes_per_second", tx) <= 0 || sa.value(t, "stripe_app_sent_bytes", tx) < perApp {
			t.Errorf("tx%d: share %v, send rate %v, sent %v: want all non-zero", i, share,
				sa.value(t, "stripe_app_send_bytes_per_second", tx), sa.value(t, "stripe_app_sent_bytes", tx))
		}
		shares = append(shares, share)
		r := map[string]string{"app": fmt.Sprint("rx", i), "peer": "1"}
		if v := sb.value(t, "stripe_app_received_bytes", r); v < perApp {
			t.Errorf("rx%d: received %v bytes on B's sample, want at least %d", i, v, perApp)
		}
		rx = append(rx, float64(got[i].Load()))
	}
	js, err := fair.Jain(shares)
	if err != nil {
		t.Fatal(err)
	}
	jr, err := fair.Jain(rx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shares %v B/s (Jain %.4f), received %v bytes (Jain %.4f), available %v B/s", shares, js, rx, jr,
		sa.value(t, "stripe_available_bytes_per_second", map[string]string{"peer": "2"}))
	if js < 0.999 {
		t.Errorf("shares %v: Jain %.4f, want equal shares", shares, js)
	}
	if n := len(sa); n != metricsFixed(len(rates), 1, 0)+apps*metricsPerApp {
		t.Errorf("%d metrics in A's sample, want %d", n, metricsFixed(len(rates), 1, 0)+apps*metricsPerApp)
	}
	// Stopping the job removes its socket.
	if err := a.h.StopJob(name); err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	if c, err := d.DialContext(ctx, "unix", filepath.Join(a.h.Facts.DataDir, name+".sock")); err == nil {
		_ = c.Close()
		t.Error("the unix socket still answers after Stop")
	}

}

// TestStartRefusesEndpointInUse: a job whose unix socket path is served by another job, or
// whose TCP address is taken, is refused with FailedPrecondition naming the field, and
// nothing stays open: no packet socket in the namespace, the other job's socket still
// answers, and the job starts once the endpoint names a free place.
func TestStartRefusesEndpointInUse(t *testing.T) {
	ns := lab.NewNetns(t)
	p := lab.NewVethPair(t, lab.VethSpec{ANetns: ns, BNetns: ns})
	s := newSide(t)
	start := func(name string, cfg Config) error {
		t.Helper()
		data, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.h.StartJob(api.Job{Name: name, Type: JobType, Config: data})
		return err
	}
	first := Config{Node: 1, Netns: ns.Name, Peers: []PeerConfig{{Node: 2}}, Links: []LinkConfig{{Interface: p.A.Name}},
		Endpoint: EndpointConfig{TCP: appsTCP}}
	if err := start("first", first); err != nil {
		t.Fatal(err)
	}
	sockets := func() int { return strings.Count(ns.Run(t, "cat", "/proc/net/packet"), "\n") }
	before := sockets()
	second := Config{Node: 3, Netns: ns.Name, Peers: []PeerConfig{{Node: 2}}, Links: []LinkConfig{{Interface: p.B.Name}},
		Endpoint: EndpointConfig{Unix: filepath.Join(s.h.Facts.DataDir, "first.sock")}}
	err := start("second", second)
	if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), "config.endpoint.unix") || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Start on another job's socket: %v, want FailedPrecondition naming config.endpoint.unix in use", err)
	}
	second.Endpoint = EndpointConfig{TCP: appsTCP}
	if err := start("second", second); api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), "config.endpoint.tcp") {
		t.Errorf("Start on a taken TCP address: %v, want FailedPrecondition naming config.endpoint.tcp", err)
	}
	if n := sockets(); n != before {
		t.Errorf("%d packet sockets after the refused Starts, %d before", n, before)
	}
	ctx := t.Context()
	c := s.client(t, ctx, "first")
	if _, err := c.Register(ctx, endpoint.Registration{Name: "x", Service: 1, LocalPort: 1, PeerNode: 2, PeerPort: 1}); err != nil {
		t.Errorf("the first job's endpoint after the refused Starts: %v", err)
	}
	second.Endpoint = EndpointConfig{}
	if err := start("second", second); err != nil {
		t.Errorf("Start with its own socket: %v", err)
	}
}
