//go:build linux

package flowingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/netsampler/goflow2/v2/decoders/netflowlegacy"

	"github.com/ovsplane/ovsplane/flowmon/collect"
	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/pgstore"
	"github.com/ovsplane/ovsplane/test/lab"
)

const recsPerDatagram = 30

// discardStore accepts every batch and keeps nothing: the collector's cost without a store's.
type discardStore struct{}

func (discardStore) Append(context.Context, store.Batch) error { return nil }
func (discardStore) Query(context.Context, query.Query) (query.Result, error) {
	return query.Result{}, fmt.Errorf("discard store: no queries")
}
func (discardStore) Retain(context.Context, time.Time) (int, error) { return 0, nil }
func (discardStore) Close() error                                   { return nil }

// datagrams builds n distinct v5 datagrams of 30 records (flows near now); send patches their
// sequence numbers and times.
func datagrams(n int) [][]byte {
	now := time.Now()
	out := make([][]byte, n)
	for d := range out {
		recs := make([]flow.Record, recsPerDatagram)
		for i := range recs {
			k := d*recsPerDatagram + i
			recs[i] = flow.Record{
				Start: now.Add(-2 * time.Second).UnixNano(), End: now.Add(-time.Second).UnixNano(),
				Src:   netip.AddrFrom4([4]byte{10, byte(k >> 16), byte(k >> 8), byte(k)}),
				Dst:   netip.AddrFrom4([4]byte{10, 200, byte(k >> 8), byte(k)}),
				Proto: 17, SrcPort: uint16(1024 + k), DstPort: 4789, Bytes: uint64(64 + k%1400), Packets: 1 + uint64(k%50),
				InIf: 1, OutIf: 2,
			}
		}
		out[d] = nftest.AppendV5(nil, nftest.V5Header{SysUptime: 10_000, UnixSecs: uint32(now.Unix()), EngineType: 1, EngineID: 1}, recs)
	}
	return out
}

// result is one arm's outcome.
type result struct {
	Sent, Received, Decoded, Stored, SocketDrops, SeqLost, Dropped uint64
	Elapsed                                                        time.Duration
	CPU                                                            time.Duration
	RcvBuf                                                         int
}

func (r result) storedPerSec() float64 { return float64(r.Stored) / r.Elapsed.Seconds() }
func (r result) lossPct() float64 {
	if r.Sent == 0 {
		return 0
	}
	return 100 * float64(r.Sent-min(r.Sent, r.Stored)) / float64(r.Sent)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// run replays datagrams for dur at rate records/s (0: as fast as one sender can) into a
// collector writing to st, then waits for the collector to settle and reports.
func run(ctx context.Context, st store.Store, appenders int, dur time.Duration, rate int) (result, error) {
	col, err := collect.New(ctx, collect.Config{
		Receiver: collect.ReceiverConfig{Addr: "127.0.0.1:0", Sockets: 2, RcvBuf: 32 << 20, Batch: 64},
		Writer: collect.WriterConfig{Instance: fmt.Sprintf("bench-%d", time.Now().UnixNano()), BatchRecords: 32768, MaxBuffered: 1 << 20,
			Appenders: appenders},
	}, st, nil)
	if err != nil {
		return result{}, err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- col.Run(rctx) }()

	// Two senders (two exporters' sockets, like two bridges with their own engine id), so
	// SO_REUSEPORT can spread them over the collector's sockets.
	const senders = 2
	cpu0, t0 := cpuTime(), time.Now()
	sentc := make(chan uint64, senders)
	senderr := make(chan error, senders)
	for k := range senders {
		go func() {
			n, err := send(col.Addr(), uint8(k), dur, rate/senders)
			sentc <- n
			senderr <- err
		}()
	}
	var sent uint64
	for range senders {
		sent += <-sentc
		if err := <-senderr; err != nil {
			return result{}, err
		}
	}
	c := col.Counters()
	// Settle: every datagram sent is either counted by the collector or dropped by the kernel.
	want := sent / recsPerDatagram
	for {
		s := c.Snapshot()
		if s.Datagrams+s.SocketDrops >= want || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := col.Flush(fctx); err != nil {
		return result{}, err
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	stop()
	if err := <-errc; err != nil {
		return result{}, err
	}
	s := c.Snapshot()
	return result{
		Sent: sent, Received: s.Datagrams * recsPerDatagram, Decoded: s.Records, Stored: s.Stored,
		SocketDrops: s.SocketDrops, SeqLost: s.Dropped["sequence_gap"],
		Dropped: s.Dropped["store_backpressure"] + s.Dropped["shutdown"],
		Elapsed: elapsed, CPU: cpu, RcvBuf: col.RcvBuf(),
	}, nil
}

// send replays v5 datagrams with engine id engine to addr for dur at rate records/s (0: flat
// out) and returns how many records it sent.
func send(addr *net.UDPAddr, engine uint8, dur time.Duration, rate int) (uint64, error) {
	conn, err := net.DialUDP("udp", nil, addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	dgs := datagrams(128)
	for _, dg := range dgs {
		dg[21] = engine
	}
	var sent uint64
	var seq uint32
	t0 := time.Now()
	for i := 0; time.Since(t0) < dur; i++ {
		if rate > 0 {
			// Pace: never ahead of rate, sleeping once a millisecond ahead.
			if ahead := time.Duration(float64(sent)/float64(rate)*1e9) - time.Since(t0); ahead > time.Millisecond {
				time.Sleep(ahead)
			}
		}
		dg := dgs[i%len(dgs)]
		binary.BigEndian.PutUint32(dg[16:], seq)
		if _, err := conn.Write(dg); err != nil {
			return sent, fmt.Errorf("send: %w", err)
		}
		seq += recsPerDatagram
		sent += recsPerDatagram
	}
	return sent, nil
}

// TestFlowIngestShort replays 50k records/s for half a second into a discard store: every
// record sent is stored or counted lost (the kernel's socket drops; nothing may vanish
// silently), and nothing is lost past the socket.
func TestFlowIngestShort(t *testing.T) {
	r, err := run(t.Context(), discardStore{}, 1, 500*time.Millisecond, 50_000)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stored+r.SocketDrops*recsPerDatagram != r.Sent || r.Decoded != r.Stored || r.Dropped != 0 {
		t.Fatalf("sent %d, decoded %d, stored %d, socket drops %d datagrams, dropped %d: loss not accounted for",
			r.Sent, r.Decoded, r.Stored, r.SocketDrops, r.Dropped)
	}
	t.Logf("sent %d, stored %d, socket drops %d datagrams", r.Sent, r.Stored, r.SocketDrops)
}

// goflow2Rate is the anchor: goflow2's v5 decoder alone on one goroutine for d, records/s.
func goflow2Rate(d time.Duration) float64 {
	dg := datagrams(1)[0]
	var p netflowlegacy.PacketNetFlowV5
	n, t0 := 0, time.Now()
	for time.Since(t0) < d {
		for range 100 {
			_ = netflowlegacy.DecodeMessageVersion(bytes.NewBuffer(dg), &p)
		}
		n += 100 * recsPerDatagram
	}
	return float64(n) / time.Since(t0).Seconds()
}

// pgStore opens a pgstore on a fresh database of the private server p.
func pgStore(tb testing.TB, p *lab.Postgres, seq *atomic.Int64) store.Store {
	conn, err := pgx.Connect(tb.Context(), p.ConnString("postgres"))
	if err != nil {
		tb.Fatalf("connect to postgres: %v", err)
	}
	defer conn.Close(context.WithoutCancel(tb.Context()))
	name := fmt.Sprintf("ingest%d", seq.Add(1)) // our own counter: safe to splice
	if _, err := conn.Exec(tb.Context(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	s, err := pgstore.Open(tb.Context(), p.ConnString(name), pgstore.Options{})
	if err != nil {
		tb.Fatalf("pgstore: %v", err)
	}
	return s
}

// BenchmarkFlowIngest: per store, a flat-out arm (the maximum) and an arm paced at 80 % of
// it (which should lose nothing). Run it once: go test -run '^$' -bench BenchmarkFlowIngest
// -benchtime 1x ./bench/flowingest/ (make bench-flowingest).
func BenchmarkFlowIngest(b *testing.B) {
	const dur = 5 * time.Second
	b.Logf("goflow2 v5 decode alone: %.0f records/s (one goroutine)", goflow2Rate(time.Second))
	pg := lab.StartPostgres(b)
	var dbs atomic.Int64
	openers := map[string]func(testing.TB) store.Store{
		"discard":  func(testing.TB) store.Store { return discardStore{} },
		"postgres": func(tb testing.TB) store.Store { return pgStore(tb, pg, &dbs) },
	}
	maps.Copy(openers, storesExtra())
	type storeArm struct {
		name      string
		appenders int
	}
	var arms []storeArm
	for _, name := range slices.Sorted(maps.Keys(openers)) {
		arms = append(arms, storeArm{name, 1})
		if name == "postgres" { // takes concurrent appends
			arms = append(arms, storeArm{name, 2})
		}
	}
	for _, sa := range arms {
		open, appenders := openers[sa.name], sa.appenders
		name := fmt.Sprintf("%s-%dappender", sa.name, appenders)
		var maxRate float64
		for _, arm := range []string{"max", "80pct"} {
			b.Run(name+"/"+arm, func(b *testing.B) {
				rate := 0
				if arm == "80pct" {
					if maxRate == 0 {
						b.Fatal("no maximum measured")
					}
					rate = int(0.8 * maxRate)
				}
				st := open(b)
				defer st.Close()
				r, err := run(b.Context(), st, appenders, dur, rate)
				if err != nil {
					b.Fatal(err)
				}
				if arm == "max" {
					maxRate = r.storedPerSec()
				}
				b.ReportMetric(r.storedPerSec(), "stored-rec/s")
				b.ReportMetric(float64(r.Sent)/r.Elapsed.Seconds(), "sent-rec/s")
				b.ReportMetric(r.lossPct(), "loss-%")
				b.ReportMetric(float64(r.CPU.Microseconds())/float64(max(r.Stored, 1)), "cpu-us/rec")
				b.Logf("%s %s: target %d rec/s; sent %d, received %d, decoded %d, stored %d; lost: socket drops %d datagrams (sequence gaps %d records), store %d records; %.0f stored rec/s, loss %.2f %%, %.2f CPU-µs/record (sender included), rcvbuf %d",
					name, arm, rate, r.Sent, r.Received, r.Decoded, r.Stored, r.SocketDrops, r.SeqLost, r.Dropped,
					r.storedPerSec(), r.lossPct(), float64(r.CPU.Microseconds())/float64(max(r.Stored, 1)), r.RcvBuf)
			})
		}
	}
}
