//go:build linux

package stripeplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/test/lab"
)

// transparentConfig is tb's job config of one side with the transparent mode: device stp0
// with address addr.
func (tb *testbed) transparentConfig(t *testing.T, aSide bool, addr string, offloads bool) []byte {
	t.Helper()
	var c Config
	if err := json.Unmarshal(tb.config(t, aSide, "weighted"), &c); err != nil {
		t.Fatal(err)
	}
	c.Peers[0].Transparent = &TransparentConfig{Device: "stp0", Address: addr, Offloads: &offloads}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// hasLink reports whether ns has a network device name.
func hasLink(t *testing.T, ns *lab.Netns, name string) bool {
	t.Helper()
	found := false
	if err := ns.Do(func() error {
		_, err := net.InterfaceByName(name)
		found = err == nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

// TestJobTransparentMode: two jobs with the transparent mode (offloads on A, off on B) create
// their tun devices; an ordinary TCP connection between the tun addresses carries 1 MiB
// intact while an application pair on the same engines exchanges messages (the engine's
// deliveries are split between tunnel and endpoint), and an application may not take the
// tunnel's service. The stats show the device; stopping the job removes it; a job whose device
// name is taken fails with FailedPrecondition naming the field, with nothing left open.
func TestJobTransparentMode(t *testing.T) {
	tb := newTestbed(t)
	a, b := newSide(t), newSide(t)
	const name = "tun0"
	if _, err := a.h.StartJob(api.Job{Name: name, Type: JobType, Config: tb.transparentConfig(t, true, "10.99.0.1/30", true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.h.StartJob(api.Job{Name: name, Type: JobType, Config: tb.transparentConfig(t, false, "10.99.0.2/30", false)}); err != nil {
		t.Fatal(err)
	}
	if !hasLink(t, tb.a, "stp0") || !hasLink(t, tb.b, "stp0") {
		t.Fatal("the jobs did not create their tun devices")
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

	// Applications on the same engines.
	snd, rcv := a.client(t, ctx, name), b.client(t, ctx, name)
	id, err := snd.Register(ctx, endpoint.Registration{Name: "tx", Service: 9, LocalPort: 1, PeerNode: 2, PeerPort: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rcv.Register(ctx, endpoint.Registration{Name: "rx", Service: 9, LocalPort: 2, PeerNode: 1, PeerPort: 1}); err != nil {
		t.Fatal(err)
	}
	appDone := make(chan error, 1)
	go func() {
		for n := range 50 {
			if err := snd.Send(ctx, id, uint32(n), bytes.Repeat([]byte{byte(n)}, 3000)); err != nil {
				appDone <- err
				return
			}
		}
		for n := range 50 {
			m, err := rcv.Next(ctx)
			if err != nil {
				appDone <- err
				return
			}
			if m.Type != endpoint.TypeDeliver || !bytes.Equal(m.Payload, bytes.Repeat([]byte{byte(n)}, 3000)) {
				appDone <- fmt.Errorf("application message %d: type %v, %d bytes, not the one sent", n, m.Type, len(m.Payload))
				return
			}
		}
		appDone <- nil
	}()

	// TCP between the tun addresses.
	var ln net.Listener
	if err := tb.b.Do(func() (err error) { ln, err = net.Listen("tcp", "10.99.0.2:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i * 7 >> 3)
	}
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		data, _ := io.ReadAll(c)
		got <- data
	}()
	err = tb.a.Do(func() error {
		d := net.Dialer{Timeout: 30 * time.Second}
		c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(want); err != nil {
			return err
		}
		return c.(*net.TCPConn).CloseWrite()
	})
	if err != nil {
		t.Fatalf("TCP over the transparent mode: %v", err)
	}
	if data := <-got; !bytes.Equal(data, want) {
		t.Fatalf("received %d bytes over the transparent mode, want the %d sent, equal", len(data), len(want))
	}
	if err := <-appDone; err != nil {
		t.Fatalf("applications beside the transparent mode: %v", err)
	}
	// The tunnel's service is not the applications'.
	tid, err := snd.Register(ctx, endpoint.Registration{Name: "tunsvc", Service: 0x5455, LocalPort: 3, PeerNode: 2, PeerPort: 3})
	if err == nil {
		err = snd.Send(ctx, tid, 1, []byte("x"))
		if err == nil {
			var m endpoint.Msg
			if m, err = snd.Next(ctx); err == nil && m.Type == endpoint.TypeError { // a refused send comes back as an error message
				err = errors.New(m.Text)
			}
		}
	}
	if err == nil || !strings.Contains(err.Error(), "transparent mode") {
		t.Errorf("an application on the tunnel's service: %v, want it refused naming the transparent mode", err)
	}

	labels := map[string]string{"peer": "2", "device": "stp0"}
	sa := a.sample(t, name)
	if v := sa.value(t, "stripe_tunnel_running", labels); v != 1 {
		t.Errorf("stripe_tunnel_running %v, want 1", v)
	}
	if v := sa.value(t, "stripe_tunnel_tx_packets", labels); v < float64(len(want)/1500) {
		t.Errorf("stripe_tunnel_tx_packets %v, want the transfer's", v)
	}
	if v := sa.value(t, "stripe_tunnel_dropped", labels); v != 0 {
		t.Errorf("stripe_tunnel_dropped %v, want 0", v)
	}

	// Stopping the job removes its device.
	if err := a.h.StopJob(name); err != nil {
		t.Fatal(err)
	}
	if hasLink(t, tb.a, "stp0") {
		t.Error("stp0 still exists after the job stopped")
	}

	// A device name taken by a device that is not a tun: refused, nothing left open.
	tb.a.Run(t, "ip", "link", "add", "stp0", "type", "veth", "peer", "name", "stp0p")
	sockets := func() int { return strings.Count(tb.a.Run(t, "cat", "/proc/net/packet"), "\n") }
	before := sockets()
	_, err = a.h.StartJob(api.Job{Name: name, Type: JobType, Config: tb.transparentConfig(t, true, "10.99.0.1/30", true)})
	if api.CodeOf(err) != api.FailedPrecondition || !strings.Contains(err.Error(), "config.peers[0].transparent") {
		t.Errorf("Start with the device name taken: %v, want FailedPrecondition naming config.peers[0].transparent", err)
	}
	if after := sockets(); after != before {
		t.Errorf("%d packet sockets after the refused Start, %d before", after, before)
	}
	if h, err := a.h.Health(); err != nil || h.Message != "0 stripe jobs" {
		t.Errorf("health %+v, %v: want no job", h, err)
	}
}
