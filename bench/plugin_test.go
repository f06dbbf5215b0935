//go:build linux

package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/bench/internal/noopplugin/noop"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/host"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

// Plugin call round trip (issue 5): the latency of one call to a plugin, for the trivial noop
// plugin (bench/internal/noopplugin: port type noop, no host work), at three levels:
//
//	direct      the plugin's Go methods called in this process: the floor, no RPC at all.
//	in-process  plugins/sdk/sdktest's in-process connection: the real gRPC shims of plugins/api
//	            over a real gRPC connection on a unix socket, server and client in this process,
//	            no TLS, no host.
//	process     plugins/host as the daemon runs it: the built plugin binary in a plugin dir,
//	            verified (permissions, SHA-256 pin), started by go-plugin with AutoMTLS, its
//	            socket in the host's private run dir, calls through the host's supervised
//	            api.PortProvider (deadline per call, the host's checks of the Attach answer).
//
// The calls: validate, a call that does nothing in the plugin, and attach of a trivial port
// (the answer is one port with one internal interface and a few bytes of state), one caller;
// and validate followed by attach, what the daemon does for each plugin port it is asked for,
// from 50 concurrent callers sharing the one connection, as in the churn. plugins/host
// does not expose the base service's Info or Health to its callers (the Info is read once per
// start and kept in Status; Health is the supervisor's), so validate is the base call measured
// through the host: a unary call that costs the plugin nothing, like Info.
//
// Every call gets a 10 s deadline from the caller at every level, as the daemon's calls do.
// Each sub-benchmark reports its p50 and p99 in µs; the process level also its ratios to the
// in-process level (x-inproc-p50, x-inproc-p99): the cost of the process boundary, mTLS and the
// host's supervision on top of gRPC. A table is printed at the end. Use a fixed count, e.g.
//
//	go test -run '^$' -bench BenchmarkPluginRoundTrip -benchtime 20000x ./bench/

// noopPluginPkg is the noop plugin's main package, built once per test binary
// (testkit.BuildOnce).
const noopPluginPkg = "github.com/ovsplane/ovsplane/bench/internal/noopplugin"

// noopPluginFile is the noop plugin's file name in a plugin dir.
const noopPluginFile = "noopplugin"

// installNoopPlugin installs the noop plugin binary as <parent>/plugins/noopplugin (directory
// 0755, file 0755: what the host's trust checks want) and returns the plugin dir and the
// binary's SHA-256 (hex), the pin for the config.
func installNoopPlugin(tb testing.TB, parent string) (pluginDir, sum string) {
	tb.Helper()
	bin, err := os.ReadFile(testkit.BuildOnce(tb, noopPluginPkg))
	if err != nil {
		tb.Fatal(err)
	}
	pluginDir = filepath.Join(parent, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginDir, noopPluginFile), bin, 0o755); err != nil {
		tb.Fatal(err)
	}
	h := sha256.Sum256(bin)
	return pluginDir, hex.EncodeToString(h[:])
}

// startNoopHost runs the noop plugin under plugins/host as the daemon does (trust checks, pin,
// AutoMTLS, default supervision) and returns its supervised port provider once it is running.
// The host is closed when tb ends.
func startNoopHost(tb testing.TB) api.PortProvider {
	tb.Helper()
	dir := testkit.ShortTempDir(tb, "opp-") // the plugin's socket path must fit 107 bytes
	pluginDir, sum := installNoopPlugin(tb, dir)
	logs := &testkit.LogBuffer{}
	h, err := host.New(host.Options{
		PluginDir: pluginDir,
		DataDir:   dir,
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Environ:   os.Environ(),
		Facts:     func(context.Context) (api.HostFacts, error) { return sdktest.DefaultFacts(), nil },
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			tb.Errorf("closing the plugin host: %v", err)
		}
		if tb.Failed() {
			tb.Logf("plugin host log (tail):\n%s", logs.Tail(3000))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.Start(ctx, []model.Plugin{{Name: noop.Name, Path: noopPluginFile, SHA256: sum}}); err != nil {
		tb.Fatal(err)
	}
	if sts := h.Plugins(); len(sts) != 1 || sts[0].State != host.StateRunning {
		tb.Fatalf("noop plugin not running: %+v\n%s", sts, logs.String())
	}
	pp, _, ok := h.PortProvider(noop.PortType)
	if !ok {
		tb.Fatalf("the host has no provider of port type %s", noop.PortType)
	}
	return pp
}

// roundTripCall is one measured operation on a port provider; i numbers the operation.
type roundTripCall struct {
	name string
	// callers is how many goroutines share the operations (1: one after the other).
	callers int
	do      func(ctx context.Context, pp api.PortProvider, i int) error
}

// roundTripCalls are what is measured: validate (the base call) and attach of a trivial port
// from one caller, and what the daemon does for each plugin port it is asked for (validate,
// then attach) from 50 concurrent callers, as in the churn. Attach names cycle through 1,024
// ports (attach is idempotent; the plugin's table stays small).
var roundTripCalls = []roundTripCall{
	{"validate", 1, rtValidate},
	{"attach", 1, rtAttach},
	{"validate+attach-50-callers", 50, func(ctx context.Context, pp api.PortProvider, i int) error {
		if err := rtValidate(ctx, pp, i); err != nil {
			return err
		}
		return rtAttach(ctx, pp, i)
	}},
}

func rtValidate(ctx context.Context, pp api.PortProvider, _ int) error {
	problems, err := pp.Validate(ctx, api.PortRequest{Bridge: "br0", Name: "n0", Type: noop.PortType})
	if err == nil && len(problems) > 0 {
		err = fmt.Errorf("validate: problems %v", problems)
	}
	return err
}

func rtAttach(ctx context.Context, pp api.PortProvider, i int) error {
	name := "n" + strconv.Itoa(i%1024)
	a, err := pp.Attach(ctx, api.PortRequest{Bridge: "br0", Name: name, Type: noop.PortType})
	if err == nil && (len(a.Ports) != 1 || a.Ports[0].Name != name) {
		err = fmt.Errorf("attach %s: %+v", name, a)
	}
	return err
}

// measure runs c.do b.N times from c.callers goroutines and returns each operation's latency;
// the first error fails b.
func (c roundTripCall) measure(b *testing.B, pp api.PortProvider) []time.Duration {
	l := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	b.ResetTimer()
	for range c.callers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < b.N && failed.Load() == nil; i = int(next.Add(1) - 1) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				t0 := time.Now()
				err := c.do(ctx, pp, i)
				l[i] = time.Since(t0)
				cancel()
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	return l
}

// roundTripLevel is one way of reaching the plugin.
type roundTripLevel struct {
	name  string
	start func(tb testing.TB) api.PortProvider
}

// roundTripLevels are the levels in the order they run (the process level last, so it can
// report its ratios to the in-process level).
var roundTripLevels = []roundTripLevel{
	{"direct", func(testing.TB) api.PortProvider { return noop.New(slog.New(slog.DiscardHandler)) }},
	{"in-process", func(tb testing.TB) api.PortProvider {
		c := sdktest.Connect(tb, noop.New(slog.New(slog.DiscardHandler)))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Plugin.Configure(ctx, api.ConfigureRequest{Config: []byte("{}"), Facts: sdktest.DefaultFacts()}); err != nil {
			tb.Fatal(err)
		}
		return c.PortProvider
	}},
	{"process", startNoopHost},
}

// BenchmarkPluginRoundTrip measures validate and attach at each level (see above).
func BenchmarkPluginRoundTrip(b *testing.B) {
	lat := map[string][]time.Duration{} // by "level/call": the last run's latencies
	for _, level := range roundTripLevels {
		pp := level.start(b)
		for _, c := range roundTripCalls {
			key := level.name + "/" + c.name
			b.Run(key, func(b *testing.B) {
				l := c.measure(b, pp)
				lat[key] = l
				p50, p99 := percentile(l, 0.5), percentile(l, 0.99)
				b.ReportMetric(us(p50), "p50-µs")
				b.ReportMetric(us(p99), "p99-µs")
				if base, ok := lat["in-process/"+c.name]; ok && level.name == "process" {
					b.ReportMetric(us(p50)/us(percentile(base, 0.5)), "x-inproc-p50")
					b.ReportMetric(us(p99)/us(percentile(base, 0.99)), "x-inproc-p99")
				}
			})
		}
	}
	printRoundTripTable(os.Stdout, lat)
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

// printRoundTripTable writes the latencies as the markdown table of docs/benchmarks.md.
func printRoundTripTable(w io.Writer, lat map[string][]time.Duration) {
	fmt.Fprintln(w, "\nPlugin call round trip, noop plugin (µs; ×: process ÷ in-process)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| call | calls | direct p50 / p99 | in-process gRPC p50 / p99 | process (host, mTLS) p50 / p99 | × p50 | × p99 |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, c := range roundTripCalls {
		cell := func(level string) string {
			l, ok := lat[level+"/"+c.name]
			if !ok {
				return "–"
			}
			return fmt.Sprintf("%.2f / %.2f", us(percentile(l, 0.5)), us(percentile(l, 0.99)))
		}
		ratio := func(q float64) string {
			p, okp := lat["process/"+c.name]
			i, oki := lat["in-process/"+c.name]
			if !okp || !oki {
				return "–"
			}
			return fmt.Sprintf("%.1f", us(percentile(p, q))/us(percentile(i, q)))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", c.name, len(lat["process/"+c.name]),
			cell("direct"), cell("in-process"), cell("process"), ratio(0.5), ratio(0.99))
	}
	fmt.Fprintln(w)
}
