//go:build linux

package gen_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/gen"
	"github.com/ovsplane/ovsplane/test/lab"
)

// vethRig is a veth pair between two namespaces: the generator writes into A (in NS1), the
// receiver counts on B (in NS2, address 10.99.0.2/24), offloads off on both ends so the
// receiving kernel verifies checksums itself.
type vethRig struct {
	NS1, NS2 *lab.Netns
	Veth     *lab.VethPair
	BMAC     net.HardwareAddr
}

func newVethRig(t *testing.T) *vethRig {
	t.Helper()
	lab.Require(t, lab.NeedNetns)
	r := &vethRig{NS1: lab.NewNetns(t), NS2: lab.NewNetns(t)}
	r.Veth = lab.NewVethPair(t, lab.VethSpec{ANetns: r.NS1, BNetns: r.NS2, BAddr: "10.99.0.2/24", DisableOffloads: true})
	err := r.NS2.Do(func() error {
		ifc, err := net.InterfaceByName(r.Veth.B.Name)
		if err != nil {
			return err
		}
		r.BMAC = ifc.HardwareAddr
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// spec returns a spec into A towards B's address and MAC.
func (r *vethRig) spec(size, flows int, count uint64) gen.Spec {
	return gen.Spec{
		Interface: r.Veth.A.Name,
		SrcMAC:    net.HardwareAddr{0x02, 0x99, 0, 0, 0, 1}, DstMAC: r.BMAC,
		SrcIP: netip.MustParseAddr("10.99.0.1"), SrcIPs: 4,
		DstIP: netip.MustParseAddr("10.99.0.2"), SrcPort: 40000, SrcPorts: 64, DstPort: 9000,
		FrameSize: size, Flows: flows, Count: count,
	}
}

// startReceiver opens a receiver on ifname inside ns and runs it until the returned stop is
// called; stop returns its final snapshot.
func startReceiver(t *testing.T, ns *lab.Netns, ifname string, flows int) (rx *gen.Receiver, stop func() gen.Received) {
	t.Helper()
	err := ns.Do(func() error {
		var err error
		rx, err = gen.NewReceiver(gen.ReceiverSpec{Interface: ifname, Flows: flows})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rx.Run(ctx) }()
	var final *gen.Received
	stop = func() gen.Received {
		if final == nil {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("receiver: %v", err)
			}
			s := rx.Snapshot()
			final = &s
			_ = rx.Close()
		}
		return *final
	}
	t.Cleanup(func() { stop() })
	return rx, stop
}

// openGenerator opens a generator for spec inside ns.
func openGenerator(t *testing.T, ns *lab.Netns, spec gen.Spec) *gen.Generator {
	t.Helper()
	var g *gen.Generator
	err := ns.Do(func() error {
		var err error
		g, err = gen.NewGenerator(spec)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// distinct returns the distinct frames a snapshot counted over all flows.
func distinct(r gen.Received) uint64 {
	var n uint64
	for _, f := range r.Flows {
		n += f.Packets - f.Duplicates
	}
	return n
}

// settle waits until the receiver has counted want distinct frames, or until its count has not
// moved for 2 s (bounded by 30 s), so a lossy run still ends with a report.
func settle(rx *gen.Receiver, want uint64) {
	last, lastChange := uint64(0), time.Now()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		n := distinct(rx.Snapshot())
		if n >= want {
			return
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > 2*time.Second {
			return
		}
	}
}

// runOnce generates spec from NS1 and counts it on B, returning the report.
func (r *vethRig) runOnce(t *testing.T, spec gen.Spec) gen.Report {
	t.Helper()
	rx, stop := startReceiver(t, r.NS2, r.Veth.B.Name, spec.Flows)
	g := openGenerator(t, r.NS1, spec)
	sent, err := g.Run(t.Context())
	if err != nil {
		t.Fatalf("generator: %v", err)
	}
	settle(rx, sent.Packets)
	rep := gen.NewReport(sent, stop())
	var b bytes.Buffer
	_ = rep.WriteTable(&b)
	t.Logf("\n%s", b.String())
	return rep
}

// checkExact fails unless every flow received exactly what was sent, bytes included.
func checkExact(t *testing.T, rep gen.Report, spec gen.Spec) {
	t.Helper()
	if rep.SentPackets != spec.Count {
		t.Errorf("sent %d frames, want Count %d", rep.SentPackets, spec.Count)
	}
	for _, f := range rep.Flows {
		l3 := uint64(spec.FrameSize - gen.EthHeaderLen)
		if f.RecvPackets != f.SentPackets || f.RecvL3Bytes != f.SentPackets*l3 ||
			f.RecvFrameBytes != f.SentPackets*uint64(spec.FrameSize) || f.SentL3Bytes != f.SentPackets*l3 ||
			f.Lost != 0 || f.Duplicates != 0 || f.Reordered != 0 {
			t.Errorf("flow %d (%s -> %s): sent %d (%d L3 B), received %d (%d L3 B, %d frame B), lost %d dup %d reord %d",
				f.Flow, f.Src, f.Dst, f.SentPackets, f.SentL3Bytes, f.RecvPackets, f.RecvL3Bytes, f.RecvFrameBytes,
				f.Lost, f.Duplicates, f.Reordered)
		}
	}
	if rep.Corrupt != 0 || rep.OutOfRange != 0 {
		t.Errorf("receiver counted %d corrupt and %d out-of-range frames", rep.Corrupt, rep.OutOfRange)
	}
}

// TestVethExactPerFlow sends 16 flows of 64, 512 and 1448-byte frames through a veth pair,
// through the TX ring and through send(2), and checks that every flow received exactly the
// frames and bytes (frame and L3) that were sent. Paced at 20k frames/s so the veth's backlog
// never overflows on a busy machine: this test is about counting, not speed.
func TestVethExactPerFlow(t *testing.T) {
	r := newVethRig(t)
	for _, c := range []struct {
		size   int
		method gen.Method
	}{{64, gen.MethodAuto}, {512, gen.MethodAuto}, {1448, gen.MethodAuto}, {64, gen.MethodSend}, {1448, gen.MethodSend}} {
		t.Run(strconv.Itoa(c.size)+"-"+c.method.String(), func(t *testing.T) {
			spec := r.spec(c.size, 16, 16*125+7) // flows 0..6 get one frame more
			spec.Method, spec.PacketsPerSecond = c.method, 20000
			rep := r.runOnce(t, spec)
			want := "tx-ring"
			if c.method == gen.MethodSend {
				want = "send"
			}
			if rep.Method != want {
				t.Errorf("method %s, want %s (the kernel refused the TX ring?)", rep.Method, want)
			}
			checkExact(t, rep, spec)
		})
	}
}

// TestKernelAcceptsChecksums sends frames addressed to B's IP and MAC and reads them with a
// plain UDP socket in B's namespace: with receive offloads off, the kernel verifies the IPv4
// and UDP checksums itself, so every datagram arriving (and no InCsumErrors) proves them
// right. The payloads carry the magic and have the right length.
func TestKernelAcceptsChecksums(t *testing.T) {
	r := newVethRig(t)
	spec := r.spec(512, 32, 32*20)
	spec.PacketsPerSecond = 20000
	var conn *net.UDPConn
	err := r.NS2.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 99, 0, 2), Port: int(spec.DstPort)})
		if err != nil {
			return err
		}
		return conn.SetReadBuffer(8 << 20)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	g := openGenerator(t, r.NS1, spec)
	sent, err := g.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	buf := make([]byte, 2048)
	for got < int(sent.Packets) {
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			break
		}
		if n != spec.FrameSize-42 || binary.BigEndian.Uint32(buf) != gen.Magic {
			t.Fatalf("datagram %d: %d bytes starting %x, want %d bytes starting with the magic", got, n, buf[:4], spec.FrameSize-42)
		}
		got++
	}
	if uint64(got) != sent.Packets || sent.Packets != spec.Count {
		t.Errorf("UDP socket received %d of %d datagrams (Count %d)", got, sent.Packets, spec.Count)
	}
	snmp := r.NS2.Run(t, "cat", "/proc/net/snmp")
	if e := udpCounter(t, snmp, "InCsumErrors"); e != 0 {
		t.Errorf("the kernel counted %d UDP checksum errors", e)
	}
}

// udpCounter returns a counter of the Udp lines of /proc/net/snmp.
func udpCounter(t *testing.T, snmp, name string) int {
	t.Helper()
	var names []string
	for _, line := range strings.Split(snmp, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == name && i < len(f) {
				v, err := strconv.Atoi(f[i])
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
	}
	t.Fatalf("no Udp %s in /proc/net/snmp:\n%s", name, snmp)
	return 0
}

// TestCancelStopsRun starts an unpaced hour-long run, waits until frames arrive, cancels, and
// checks that Run returns with the cancellation and what it sent (it must return well within
// the test's wait of 30 s; how fast is logged, not asserted).
func TestCancelStopsRun(t *testing.T) {
	r := newVethRig(t)
	spec := r.spec(64, 4, 0)
	spec.Duration = time.Hour
	rx, stop := startReceiver(t, r.NS2, r.Veth.B.Name, spec.Flows)
	g := openGenerator(t, r.NS1, spec)
	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		sent gen.Sent
		err  error
	}
	done := make(chan result, 1)
	go func() {
		s, err := g.Run(ctx)
		done <- result{s, err}
	}()
	lab.WaitFor(t, 30*time.Second, "frames to arrive", func(context.Context) error {
		if distinct(rx.Snapshot()) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	cancelled := time.Now()
	cancel()
	select {
	case res := <-done:
		t.Logf("Run returned %v after cancel, having sent %d frames (%s)", time.Since(cancelled), res.sent.Packets, res.sent.Method)
		if !errors.Is(res.err, context.Canceled) {
			t.Errorf("Run error %v, want context.Canceled", res.err)
		}
		if res.sent.Packets == 0 {
			t.Errorf("Sent reports no frames, but the receiver counted some")
		}
		if got := distinct(stop()); got > res.sent.Packets {
			t.Errorf("receiver counted %d distinct frames, more than the %d sent", got, res.sent.Packets)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of cancel")
	}
	if _, err := g.Run(t.Context()); err == nil {
		t.Error("a second Run of the same generator succeeded; want an error")
	}
}

// TestPacedRate runs 2 s at 10k frames/s and logs the achieved rate (not asserted: timing on a
// shared machine is noise), and checks nothing was lost.
func TestPacedRate(t *testing.T) {
	r := newVethRig(t)
	spec := r.spec(512, 8, 0)
	spec.Duration, spec.PacketsPerSecond = 2*time.Second, 10000
	rep := r.runOnce(t, spec)
	t.Logf("asked 10000 pps for 2 s: sent %d frames, %.0f pps achieved (load %s)", rep.SentPackets, rep.SentPPS, loadavg(t))
	if rep.Lost != 0 || rep.SentPackets == 0 {
		t.Errorf("sent %d, lost %d", rep.SentPackets, rep.Lost)
	}
}

// loadavg returns the first three fields of /proc/loadavg.
func loadavg(t testing.TB) string {
	t.Helper()
	out := (*lab.Netns)(nil).Run(t, "cat", "/proc/loadavg")
	f := strings.Fields(out)
	return strings.Join(f[:min(3, len(f))], " ")
}

// BenchmarkVethSend sends unpaced 64 and 1448-byte frames into a veth pair with nothing
// counting on the far end, through the TX ring and through send(2), and reports the frames/s
// the kernel took and the test process's CPU seconds per Gbit of frames (run it alone:
// go test -run '^$' -bench BenchmarkVethSend -benchtime 1x ./flowmon/gen/).
func BenchmarkVethSend(b *testing.B) {
	lab.Require(b, lab.NeedNetns)
	ns1, ns2 := lab.NewNetns(b), lab.NewNetns(b)
	v := lab.NewVethPair(b, lab.VethSpec{ANetns: ns1, BNetns: ns2, DisableOffloads: true})
	for _, size := range []int{64, 1448} {
		for _, m := range []gen.Method{gen.MethodRing, gen.MethodSend} {
			b.Run(strconv.Itoa(size)+"B-"+m.String(), func(b *testing.B) {
				for b.Loop() {
					spec := gen.Spec{Interface: v.A.Name, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1},
						DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, SrcIP: netip.MustParseAddr("10.97.0.1"),
						DstIP: netip.MustParseAddr("10.97.0.2"), SrcPort: 1000, SrcPorts: 64, DstPort: 2000,
						FrameSize: size, Flows: 64, Count: 300000, Method: m}
					var g *gen.Generator
					if err := ns1.Do(func() error {
						var err error
						g, err = gen.NewGenerator(spec)
						return err
					}); err != nil {
						b.Fatal(err)
					}
					cpu0 := processCPU()
					sent, err := g.Run(b.Context())
					cpu := processCPU() - cpu0
					if err != nil {
						b.Fatal(err)
					}
					secs := sent.End.Sub(sent.Start).Seconds()
					gbit := float64(sent.Packets) * float64(size) * 8 / 1e9
					b.ReportMetric(float64(sent.Packets)/secs, "frames/s")
					b.ReportMetric(gbit/secs*1000, "Mbit/s")
					b.ReportMetric(cpu.Seconds()/gbit, "cpu-s/Gbit")
					b.Logf("%s: %d frames in %.3f s, retries %d, load %s", sent.Method, sent.Packets, secs, sent.Retries, loadavg(b))
				}
			})
		}
	}
}

// processCPU is the test process's user plus system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
