//go:build linux

package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// Each benchmark starts a fresh ovsdb-server and ovs-vswitchd (dummy datapath, so every port gets
// a real ofport without devices), creates bridge br0, and then adds n ports the way a user of
// each tool would, waiting for ovs-vswitchd to apply the change as ovs-vsctl does by default.
// The metric that matters is ms/port; compare tools within one run (see docs/benchmarks.md).

const portsPerRun = 400

type setup struct {
	db *lab.OVSDB
	c  *ovsdb.Client
}

func newSetup(b *testing.B) *setup {
	b.Helper()
	lab.Require(b, lab.NeedOVS)
	db := lab.StartOVSDB(b)
	db.StartOVSVswitchd(b, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{db.Endpoint}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	if _, err := c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil).Commit(ctx, ovsdb.CommitOptions{}); err != nil {
		b.Fatal(err)
	}
	return &setup{db: db, c: c}
}

// meter marks the start of a measured phase: wall time and this process's CPU time (the
// ovsplane client; ovsdb-server, ovs-vswitchd and ovs-vsctl are other processes).
type meter struct {
	start time.Time
	cpu   time.Duration
}

func startMeter() meter { return meter{start: time.Now(), cpu: selfCPU()} }

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func report(b *testing.B, m meter, ports int) {
	el := time.Since(m.start)
	b.ReportMetric(float64(el.Microseconds())/1000/float64(ports), "ms/port")
	b.ReportMetric(el.Seconds(), "s/total")
	b.ReportMetric(float64((selfCPU()-m.cpu).Microseconds())/1000/float64(ports), "client-cpu-ms/port")
}

// BenchmarkAddPorts compares adding portsPerRun ports to one bridge.
func BenchmarkAddPorts(b *testing.B) {
	b.Run("ovsplane/one-txn", func(b *testing.B) {
		for range b.N {
			s := newSetup(b)
			start := startMeter()
			tx := s.c.NewTxn(1)
			for i := range portsPerRun {
				tx.EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("p%d", i)}})
			}
			res, err := tx.Commit(context.Background(), ovsdb.CommitOptions{})
			if err != nil {
				b.Fatal(err)
			}
			report(b, start, portsPerRun)
			checkOfports(b, res, portsPerRun)
		}
	})
	b.Run("ovs-vsctl/one-invocation", func(b *testing.B) {
		for range b.N {
			s := newSetup(b)
			args := []string{}
			for i := range portsPerRun {
				args = append(args, "--", "add-port", "br0", fmt.Sprintf("p%d", i))
			}
			start := startMeter()
			s.db.Vsctl(b, args[1:]...)
			report(b, start, portsPerRun)
		}
	})
	b.Run("ovsplane/txn-per-port", func(b *testing.B) {
		for range b.N {
			s := newSetup(b)
			start := startMeter()
			for i := range portsPerRun {
				res, err := s.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("p%d", i)}}).
					Commit(context.Background(), ovsdb.CommitOptions{})
				if err != nil {
					b.Fatal(err)
				}
				checkOfports(b, res, 1)
			}
			report(b, start, portsPerRun)
		}
	})
	b.Run("ovs-vsctl/process-per-port", func(b *testing.B) {
		for range b.N {
			s := newSetup(b)
			start := startMeter()
			for i := range portsPerRun {
				s.db.Vsctl(b, "add-port", "br0", fmt.Sprintf("p%d", i))
			}
			report(b, start, portsPerRun)
		}
	})
}

// BenchmarkAddPortToLargeBridge measures adding ports one at a time to a bridge that already
// holds 5,000, without waiting for ovs-vswitchd (whose reconfiguration time is the same for every
// tool): this isolates the OVSDB side. ovs-vsctl reads the whole database and rewrites
// Bridge.ports whole on every call; ovsplane reads nothing (its cache is current) and sends a
// mutate of one element.
func BenchmarkAddPortToLargeBridge(b *testing.B) {
	const existing, extra = 5000, 100
	prepare := func(b *testing.B) *setup {
		s := newSetup(b)
		tx := s.c.NewTxn(1)
		for i := range existing {
			tx.EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("base%d", i)}})
		}
		if _, err := tx.Commit(context.Background(), ovsdb.CommitOptions{NoWait: true}); err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("ovsplane", func(b *testing.B) {
		for range b.N {
			s := prepare(b)
			start := startMeter()
			for i := range extra {
				if _, err := s.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("x%d", i)}}).
					Commit(context.Background(), ovsdb.CommitOptions{NoWait: true}); err != nil {
					b.Fatal(err)
				}
			}
			report(b, start, extra)
		}
	})
	b.Run("ovs-vsctl", func(b *testing.B) {
		for range b.N {
			s := prepare(b)
			start := startMeter()
			for i := range extra {
				s.db.Vsctl(b, "--no-wait", "add-port", "br0", fmt.Sprintf("x%d", i))
			}
			report(b, start, extra)
			if got := len(strings.Fields(s.db.Vsctl(b, "list-ports", "br0"))); got != existing+extra {
				b.Fatalf("bridge has %d ports, want %d", got, existing+extra)
			}
		}
	})
}

func checkOfports(b *testing.B, res *ovsdb.Result, want int) {
	b.Helper()
	if len(res.Interfaces) != want {
		b.Fatalf("acknowledged %d interfaces, want %d", len(res.Interfaces), want)
	}
	for _, st := range res.Interfaces {
		if st.Ofport < 1 {
			b.Fatalf("interface %s has ofport %d after the acknowledgement", st.Name, st.Ofport)
		}
	}
}
