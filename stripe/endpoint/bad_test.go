package endpoint_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/stripe/fair"
)

// code returns the endpoint error code of err, or fails.
func code(t *testing.T, what string, err error) endpoint.Code {
	t.Helper()
	var e *endpoint.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v is not an endpoint refusal", what, err)
	}
	return e.Code
}

func TestBadInputIsRefusedWithoutDisturbingOthers(t *testing.T) {
	ta, tb := memPair(1400, 1)
	a := startEndpoint(t, ta, 2, []float64{1e9}, func(c *endpoint.Config) { c.MaxMessage = 5000; c.MaxApps = 3 })
	b := startEndpoint(t, tb, 1, []float64{1e9}, nil)
	for _, kind := range []string{"unix", "tcp", "udp"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			da, db := serve(t, a, kind), serve(t, b, kind)
			// A well-behaved pair on other connections, used before and after.
			good, peer := da(t), db(t)
			gid, err := good.Register(ctx, endpoint.Registration{Name: "good", Service: 1, LocalPort: 10, PeerNode: 2, PeerPort: 20})
			if err != nil {
				t.Fatal(err)
			}
			pid, err := peer.Register(ctx, endpoint.Registration{Name: "peer", Service: 1, LocalPort: 20, PeerNode: 1, PeerPort: 10})
			if err != nil {
				t.Fatal(err)
			}
			roundTrip := func(i int) {
				t.Helper()
				want := []byte(fmt.Sprintf("message %d", i))
				if err := good.Send(ctx, gid, 1, want); err != nil {
					t.Fatal(err)
				}
				m, err := peer.Next(ctx)
				if err != nil || m.App != pid || !bytes.Equal(m.Payload, want) {
					t.Fatalf("good app's message %d: %+v, %v", i, m, err)
				}
			}
			roundTrip(0)

			bad := da(t)
			bid, err := bad.Register(ctx, endpoint.Registration{Name: "bad", Service: 1, LocalPort: 11, PeerNode: 2, PeerPort: 21})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				what string
				reg  endpoint.Registration
				want endpoint.Code
			}{
				{"same name", endpoint.Registration{Name: "good", Service: 1, LocalPort: 12, PeerNode: 2, PeerPort: 1}, endpoint.CodeAlreadyRegistered},
				{"same port", endpoint.Registration{Name: "other", Service: 1, LocalPort: 10, PeerNode: 2, PeerPort: 1}, endpoint.CodeAlreadyRegistered},
				{"unknown peer", endpoint.Registration{Name: "other", Service: 1, LocalPort: 12, PeerNode: 9, PeerPort: 1}, endpoint.CodeUnknownPeer},
				{"port 0", endpoint.Registration{Name: "other", Service: 1, LocalPort: 0, PeerNode: 2, PeerPort: 1}, endpoint.CodeInvalid},
				{"control service", endpoint.Registration{Name: "other", Service: 0xffff, LocalPort: 12, PeerNode: 2, PeerPort: 1}, endpoint.CodeInvalid},
			} {
				_, err := bad.Register(ctx, c.reg)
				if got := code(t, c.what, err); got != c.want {
					t.Errorf("%s: code %v (%v), want %v", c.what, got, err, c.want)
				}
			}
			// The third application fills MaxApps; a fourth is refused.
			if _, err := bad.Register(ctx, endpoint.Registration{Name: "fourth", Service: 2, LocalPort: 1, PeerNode: 2, PeerPort: 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := bad.Register(ctx, endpoint.Registration{Name: "fifth", Service: 2, LocalPort: 2, PeerNode: 2, PeerPort: 1}); code(t, "fifth app", err) != endpoint.CodeTooManyApps {
				t.Errorf("fifth app: %v, want TOO_MANY_APPS", err)
			}
			// Asynchronous refusals of sends come back with their tag.
			expect := func(what string, tag uint32, want endpoint.Code) {
				t.Helper()
				m, err := bad.Next(ctx)
				if err != nil || m.Type != endpoint.TypeError || m.Tag != tag || m.Code != want {
					t.Fatalf("%s: got %+v, %v; want error %v with tag %d", what, m, err, want, tag)
				}
				t.Logf("%s: %v: %s", what, m.Code, m.Text)
			}
			if err := bad.Send(ctx, bid, 41, make([]byte, 5001)); err != nil {
				t.Fatal(err)
			}
			if kind == "udp" {
				expect("oversize message", 0, endpoint.CodeTooLarge)
			} else {
				expect("oversize message", 41, endpoint.CodeTooLarge)
			}
			if err := bad.Send(ctx, 999, 42, []byte("x")); err != nil {
				t.Fatal(err)
			}
			expect("unknown app", 42, endpoint.CodeUnknownApp)
			if err := bad.Send(ctx, gid, 43, []byte("x")); err != nil {
				t.Fatal(err)
			}
			expect("another client's app", 43, endpoint.CodeUnknownApp)
			if err := bad.Send(ctx, bid, 44, nil); err != nil {
				t.Fatal(err)
			}
			expect("empty message", 44, endpoint.CodeInvalid)
			// Raw malformed control messages on the same connection.
			raw := rawConn(t, bad)
			for _, m := range [][]byte{
				{0, 0, 0, 1, 99},            // unknown type
				{0, 0, 0, 3, 1, 0, 0},       // truncated register
				{0, 0, 0, 5, 4, 0, 0, 0, 1}, // a delivery from a client
				{0, 0, 0, 5, 5, 0, 0, 0, 1}, // deregister missing a byte
			} {
				if _, err := raw.Write(m); err != nil {
					t.Fatal(err)
				}
				m2, err := bad.Next(ctx)
				if err != nil || m2.Type != endpoint.TypeError || (m2.Code != endpoint.CodeMalformed && m2.Code != endpoint.CodeUnexpected) {
					t.Fatalf("malformed %x: got %+v, %v", m, m2, err)
				}
			}
			if kind != "udp" {
				// A length prefix beyond the bound is refused and its bytes skipped.
				huge := binary.BigEndian.AppendUint32(nil, 100000)
				if _, err := raw.Write(append(huge, make([]byte, 100000)...)); err != nil {
					t.Fatal(err)
				}
				expect("oversize length prefix", 0, endpoint.CodeTooLarge)
			}
			// The bad client still works, and so does the good one.
			if err := bad.Deregister(ctx, bid); err != nil {
				t.Fatal(err)
			}
			if err := bad.Deregister(ctx, bid); code(t, "double deregister", err) != endpoint.CodeUnknownApp {
				t.Errorf("double deregister: %v", err)
			}
			roundTrip(1)
			if kind == "udp" {
				if err := deregisterAll(ctx, a, bad); err != nil {
					t.Fatal(err)
				}
			}
			_ = bad.Close()
			waitFor(t, "the bad client's apps deregistered", func() error {
				if n := len(a.Stats().Apps); n != 1 {
					return fmt.Errorf("%d apps", n)
				}
				return nil
			})
			roundTrip(2)
			if err := good.Deregister(ctx, gid); err != nil {
				t.Fatal(err)
			}
			if err := peer.Deregister(ctx, pid); err != nil {
				t.Fatal(err)
			}
		})
	}
	if s := a.Stats(); s.Malformed == 0 || s.Refused == 0 {
		t.Fatalf("refusals not counted: %+v", s)
	}
}

// rawConn is the client's connection, for writing raw bytes.
func rawConn(t *testing.T, c *endpoint.Client) net.Conn {
	t.Helper()
	return c.Conn()
}

// deregisterAll deregisters the UDP client's remaining app ("fourth"): a datagram client has
// no connection whose close would do it.
func deregisterAll(ctx context.Context, ep *endpoint.Endpoint, c *endpoint.Client) error {
	for _, a := range ep.Stats().Apps {
		if a.Name == "fourth" {
			return c.Deregister(ctx, a.ID)
		}
	}
	return errors.New("app fourth not registered")
}

func TestSharesFollowAvailableBandwidthAndDemands(t *testing.T) {
	ta, _ := memPair(1400, 4)
	vmax := []float64{100e3, 200e3, 300e3, 400e3}
	// Other traffic uses 50 % of every link: 500 kB/s of 1 MB/s is available.
	ta.setLoads([]float64{0.5, 0.5, 0.5, 0.5})
	a := startEndpoint(t, ta, 2, vmax, func(c *endpoint.Config) { c.Period = 5 * time.Millisecond })
	dial := serve(t, a, "unix")
	ctx := t.Context()
	c := dial(t)
	waitFor(t, "the first period's capacity", func() error {
		if p := a.Stats().Peers[0]; math.Abs(p.Capacity-500e3) > 1 {
			return fmt.Errorf("capacity %v", p.Capacity)
		}
		return nil
	})
	for i := range 5 {
		if _, err := c.Register(ctx, endpoint.Registration{Name: fmt.Sprint("app", i), Service: 1, LocalPort: uint16(i + 1), PeerNode: 2, PeerPort: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s := a.Stats()
	var shares []float64
	for _, ap := range s.Apps {
		shares = append(shares, ap.Share)
		if math.Abs(ap.Share-100e3) > 1 {
			t.Errorf("app %s share %v, want Σ(Vmax−V)/5 = 100e3", ap.Name, ap.Share)
		}
	}
	if j, _ := fair.Jain(shares); j < 0.999 || math.Abs(s.Peers[0].SeedShare-100e3) > 1 {
		t.Errorf("shares %v (Jain %v), seed share %v", shares, j, s.Peers[0].SeedShare)
	}
	// Two applications demand little: max-min gives them their demand and the rest equally.
	for i, rate := range []uint64{20e3, 30e3} {
		if _, err := c.Register(ctx, endpoint.Registration{Name: fmt.Sprint("small", i), Service: 2, LocalPort: uint16(i + 1), PeerNode: 2, PeerPort: 1, Rate: rate}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ap := range a.Stats().Apps {
		want := (500e3 - 50e3) / 5
		if ap.Demand > 0 {
			want = ap.Demand
		}
		if math.Abs(ap.Share-want) > 1 {
			t.Errorf("app %s (demand %v) share %v, want %v", ap.Name, ap.Demand, ap.Share, want)
		}
	}
	// Other traffic grows to 90 %: the shares shrink with it, and 100 kB/s shared by seven
	// is below both demands, so all seven get the same.
	ta.setLoads([]float64{0.9, 0.9, 0.9, 0.9})
	waitFor(t, "the shares to follow the load", func() error {
		for _, ap := range a.Stats().Apps {
			want := 100e3 / 7
			if math.Abs(ap.Share-want) > 1 {
				return fmt.Errorf("app %s share %v, want %v", ap.Name, ap.Share, want)
			}
		}
		return nil
	})
}

func TestSlowReaderDoesNotBlockOthers(t *testing.T) {
	ta, tb := memPair(1400, 1)
	a := startEndpoint(t, ta, 2, []float64{1e9}, nil)
	b := startEndpoint(t, tb, 1, []float64{1e9}, func(c *endpoint.Config) { c.QueueDepth = 4 })
	da, db := serve(t, a, "unix"), serve(t, b, "unix")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	send, slow, fast := da(t), db(t), db(t)
	s1, err := send.Register(ctx, endpoint.Registration{Name: "to-slow", Service: 1, LocalPort: 1, PeerNode: 2, PeerPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := send.Register(ctx, endpoint.Registration{Name: "to-fast", Service: 1, LocalPort: 2, PeerNode: 2, PeerPort: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.Register(ctx, endpoint.Registration{Name: "slow", Service: 1, LocalPort: 1, PeerNode: 1, PeerPort: 1}); err != nil {
		t.Fatal(err)
	}
	fid, err := fast.Register(ctx, endpoint.Registration{Name: "fast", Service: 1, LocalPort: 2, PeerNode: 1, PeerPort: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The slow application never reads: 400 messages of 60 kB (24 MB) overflow its socket
	// buffer and its queue of 4.
	big := make([]byte, 60000)
	for i := range 400 {
		if err := send.Send(ctx, s1, uint32(i), big); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the slow application's drops", func() error {
		for _, ap := range b.Stats().Apps {
			if ap.Name == "slow" && ap.ReceiveDrops > 0 {
				return nil
			}
		}
		return errors.New("no drops yet")
	})
	for i := range 100 {
		if err := send.Send(ctx, s2, uint32(i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		m, err := fast.Next(ctx)
		if err != nil || m.App != fid || len(m.Payload) != 1 || m.Payload[0] != byte(i) {
			t.Fatalf("fast application's message %d: %+v, %v", i, m, err)
		}
	}
	// The writer counts a message once its write returned, which may be after the client read
	// it: wait (bounded) for the count.
	waitFor(t, "the fast application's 100 messages counted", func() error {
		for _, ap := range b.Stats().Apps {
			if ap.Name == "fast" && ap.ReceivedMessages != 100 {
				return fmt.Errorf("fast application: %d messages counted", ap.ReceivedMessages)
			}
		}
		return nil
	})
	for _, ap := range b.Stats().Apps {
		t.Logf("%s: received %d, dropped %d", ap.Name, ap.ReceivedMessages, ap.ReceiveDrops)
		if ap.Name == "fast" && (ap.ReceiveDrops != 0 || ap.ReceivedMessages != 100) {
			t.Errorf("fast application: %+v", ap)
		}
	}
}
