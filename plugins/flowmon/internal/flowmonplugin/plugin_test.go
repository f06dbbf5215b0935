package flowmonplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/duckstore"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
)

func TestCollectorConfigErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, field, want string }{
		{`{"listen":["2055"]}`, "config.listen[0]", "IP:port"},
		{`{"listen":["127.0.0.1:2055","127.0.0.1:2055"]}`, "config.listen[1]", "twice"},
		{`{"workers":65}`, "config.workers", "1 to 64"},
		{`{"store":{"kind":"sqlite"}}`, "config.store.kind", "embedded"},
		{`{"store":{"kind":"postgres"}}`, "config.store.dsn", "connection string"},
		{`{"store":{"dsn":"postgres://x"}}`, "config.store.dsn", "kind postgres"},
		{`{"store":{"path":"../escape.duckdb"}}`, "config.store.path", "inside the plugin's data dir"},
		{`{"store":{"retention_days":4000}}`, "config.store.retention_days", "1 to 3650"},
		{`{"engines":[{"bridge":"br 0","netflow":{}}]}`, "config.engines[0].bridge", "bridge name"},
		{`{"engines":[{"bridge":"br0"}]}`, "config.engines[0]", "netflow"},
		{`{"engines":[{"bridge":"br0","netflow":{"engine_id":1}},{"bridge":"br1","netflow":{"engine_id":1}}]}`, "config.engines[1]", "distinct engine ids"},
		{`{"engines":[{"bridge":"br0","exporter":"host","netflow":{}}]}`, "config.engines[0].exporter", "IP address"},
		{`{"flush_ms":5}`, "config.flush_ms", "10 to 60000"},
		{`{"batch_records":10,"buffer_records":5}`, "config.buffer_records", "batch_records"},
		{`{"appenders":17}`, "config.appenders", "1 to 16"},
		{`{"query_socket":"rel.sock"}`, "config.query_socket", "absolute"},
		{`{"query_timeout_ms":1}`, "config.query_timeout_ms", "100 to"},
		{`{"colour":1}`, "config", "unknown field"},
		{`{"workers":"two"}`, "config.workers", "wrong type"},
	} {
		_, err := ParseCollectorConfig([]byte(tc.cfg))
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.InvalidArgument || len(ae.Problems) != 1 || ae.Problems[0].Field != tc.field ||
			!strings.Contains(ae.Problems[0].Message, tc.want) {
			t.Errorf("%s: got %v; want a problem on %s mentioning %q", tc.cfg, err, tc.field, tc.want)
		}
	}
	c, err := ParseCollectorConfig(nil)
	if err != nil || len(c.Listen) != 1 || c.Listen[0] != DefaultListen || c.Workers != DefaultWorkers || c.Store.Kind != StoreEmbedded ||
		c.Store.Path != DefaultStorePath || c.Store.RetentionDays != DefaultRetentionDays {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
}

func TestGenConfigErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, field, want string }{
		{`{}`, "config.interface", "kernel interface"},
		{`{"interface":"veth0","frame_size":63}`, "config.frame_size", "64 to 1448"},
		{`{"interface":"veth0","frame_size":1449}`, "config.frame_size", "64 to 1448"},
		{`{"interface":"veth0","flows":70000}`, "config.flows", "1 to 65536"},
		{`{"interface":"veth0","rate_pps":-1}`, "config.rate_pps", "packets per second"},
		{`{"interface":"veth0","duration_ms":90000000}`, "config.duration_ms", "1 to"},
		{`{"interface":"veth0","src":"::1"}`, "config.src", "IPv4"},
		{`{"interface":"veth0","src_port":65535,"flows":2}`, "config.src_port", "passes port 65535"},
		{`{"interface":"veth0","dst_mac":"zz"}`, "config.dst_mac", "Ethernet address"},
	} {
		_, err := ParseGenConfig([]byte(tc.cfg))
		var ae *api.Error
		if !errors.As(err, &ae) || len(ae.Problems) != 1 || ae.Problems[0].Field != tc.field || !strings.Contains(ae.Problems[0].Message, tc.want) {
			t.Errorf("%s: got %v; want a problem on %s mentioning %q", tc.cfg, err, tc.field, tc.want)
		}
	}
	if _, err := ParseGenConfig([]byte(`{"interface":"veth0","frame_size":1448,"flows":100,"rate_pps":1000}`)); err != nil {
		t.Fatalf("valid generator config refused: %v", err)
	}
}

// openDuck is Options.OpenStore for tests: the embedded store, as the binary opens it.
func openDuck(ctx context.Context, spec StoreSpec) (store.Store, error) {
	if spec.Kind != StoreEmbedded {
		return nil, fmt.Errorf("kind %s", spec.Kind)
	}
	return duckstore.Open(ctx, filepath.Dir(spec.Path), duckstore.Options{FileName: filepath.Base(spec.Path)})
}

// freeUDPPort returns a UDP port of 127.0.0.1 that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestCollectorJob runs a flowmon-collector job with the embedded store, sends it NetFlow v5
// records of engine 3 (mapped to br0, whose ports the daemon handed through Flows), and checks
// them through the job's query socket: every field as sent, the bridge and port names
// resolved, a top-N summed; then Health, Stats and a clean stop.
func TestCollectorJob(t *testing.T) {
	dir := testkit.ShortTempDir(t, "fm-")
	p := New(Options{OpenStore: openDuck, DataDir: dir})
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	ctx := t.Context()
	fs, err := p.Flows(ctx, api.BridgeFacts{Name: "br0", Ports: []api.BridgePort{{Interface: "p1", Ofport: 1}, {Interface: "p2", Ofport: 2}}})
	if err != nil || fs.RefreshMillis != 0 || len(fs.Flows) != 0 {
		t.Fatalf("Flows without a collector: %+v, %v", fs, err)
	}
	port := freeUDPPort(t)
	cfg := fmt.Sprintf(`{"listen":["127.0.0.1:%d"],"workers":1,"flush_ms":20,"engines":[{"bridge":"br0","netflow":{"engine_type":0,"engine_id":3}}]}`, port)
	status, err := p.Start(ctx, api.Job{Name: "c1", Type: JobCollector, Config: []byte(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	sock := SocketPath(dir, "c1")
	if !strings.Contains(status, sock) {
		t.Errorf("status %q does not name the socket %s", status, sock)
	}
	if s, err := p.Start(ctx, api.Job{Name: "c1", Type: JobCollector, Config: []byte(cfg)}); err != nil || s != "running" {
		t.Errorf("same start again: %q, %v", s, err)
	}
	if fs, _ := p.Flows(ctx, api.BridgeFacts{Name: "br0", Ports: []api.BridgePort{{Interface: "p1", Ofport: 1}, {Interface: "p2", Ofport: 2}}}); fs.RefreshMillis == 0 {
		t.Error("Flows with a collector running asks no refresh")
	}

	now := time.Now().Truncate(time.Second)
	var sent []flow.Record
	for i := range 3 {
		sent = append(sent, flow.Record{Start: now.Add(-2 * time.Second).UnixNano(), End: now.Add(-time.Second).UnixNano(),
			Src: netip.MustParseAddr(fmt.Sprintf("10.0.0.%d", i+1)), Dst: netip.MustParseAddr("10.0.1.1"), Proto: 17,
			SrcPort: uint16(10000 + i), DstPort: 9, Bytes: uint64(1000 * (i + 1)), Packets: uint64(10 * (i + 1)), InIf: 1, OutIf: 2})
	}
	dgram := nftest.AppendV5(nil, nftest.V5Header{SysUptime: 100000, UnixSecs: uint32(now.Unix()), EngineID: 3}, sent)
	conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(dgram); err != nil {
		t.Fatal(err)
	}
	c := query.NewClient(sock, 10*time.Second)
	q := query.Query{Kind: query.Flows, From: now.Add(-time.Hour), To: now.Add(time.Hour), Limit: 10}
	var res query.Result
	lab.WaitFor(t, 30*time.Second, "the 3 records to be queryable", func(ctx context.Context) error {
		res, err = c.Query(ctx, q)
		if err != nil {
			return err
		}
		if len(res.Records) != 3 {
			return fmt.Errorf("%d records", len(res.Records))
		}
		return nil
	})
	got := map[string]query.RecordRow{}
	for _, r := range res.Records {
		got[r.Src.String()] = r
	}
	for _, s := range sent {
		r, ok := got[s.Src.String()]
		if !ok || r.Dst != s.Dst || r.SrcPort != s.SrcPort || r.DstPort != s.DstPort || r.Bytes != s.Bytes || r.Packets != s.Packets ||
			r.Proto != 17 || r.Bridge != "br0" || r.InPort != "p1" || r.OutPort != "p2" || r.Domain != 3 || r.Protocol != "netflow5" ||
			r.Exporter != netip.MustParseAddr("127.0.0.1") || !r.End.Equal(time.Unix(0, s.End)) {
			t.Errorf("record of %s: got %+v", s.Src, r)
		}
	}
	top, err := c.Query(ctx, query.Query{Kind: query.Top, From: q.From, To: q.To, Limit: 5, GroupBy: query.KeyDst, Metric: query.Bytes})
	if err != nil || len(top.Groups) != 1 || top.Groups[0] != (query.Group{Key: "10.0.1.1", Bytes: 6000, Packets: 60, Flows: 3}) {
		t.Errorf("top by dst: %+v, %v", top, err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Job != "c1" || st.Counters["stored"] != 3 || st.Counters["datagrams"] != 1 || st.Counters["dropped"] != 0 {
		t.Errorf("status: %+v, %v", st, err)
	}
	h, _ := p.Health(ctx)
	if h.State != api.HealthOK || !strings.Contains(h.Message, "flowmon-collector c1") {
		t.Errorf("health %+v", h)
	}
	sctx, cancel := context.WithCancel(ctx)
	var sample api.StatsSample
	_ = p.Stats(sctx, api.StatsRequest{Jobs: []string{"c1"}}, func(s api.StatsSample) error { sample = s; cancel(); return nil })
	stored := -1.0
	for _, m := range sample.Metrics {
		if m.Name == "flowmon_stored" {
			stored = m.Value
		}
	}
	if sample.Job != "c1" || stored != 3 {
		t.Errorf("stats sample %+v: flowmon_stored %v, want 3", sample, stored)
	}
	// New bridge facts from the daemon rename the ports of later records.
	if _, err := p.Flows(ctx, api.BridgeFacts{Name: "br0", Ports: []api.BridgePort{{Interface: "vhu7", Ofport: 1}, {Interface: "p2", Ofport: 2}}}); err != nil {
		t.Fatal(err)
	}
	later := sent[0]
	later.Src = netip.MustParseAddr("10.0.0.99")
	if _, err := conn.Write(nftest.AppendV5(nil, nftest.V5Header{SysUptime: 100000, UnixSecs: uint32(now.Unix()), EngineID: 3, FlowSequence: 3}, []flow.Record{later})); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 30*time.Second, "the later record, named from the new facts", func(ctx context.Context) error {
		r, err := c.Query(ctx, query.Query{Kind: query.Flows, From: q.From, To: q.To, Limit: 10, Filter: query.Filter{Src: []netip.Prefix{netip.MustParsePrefix("10.0.0.99/32")}}})
		if err != nil {
			return err
		}
		if len(r.Records) != 1 || r.Records[0].InPort != "vhu7" {
			return fmt.Errorf("records %+v", r.Records)
		}
		return nil
	})
	// A bad datagram is counted and reported by Health as loss since the last check.
	if _, err := conn.Write([]byte{0, 7, 0, 0}); err != nil {
		t.Fatal(err)
	}
	lab.WaitFor(t, 30*time.Second, "Health to report the bad datagram", func(context.Context) error {
		h, _ := p.Health(ctx)
		if h.State != api.HealthDegraded || !strings.Contains(h.Message, "not decoded") {
			return fmt.Errorf("health %+v", h)
		}
		return nil
	})

	if err := p.Stop(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket outlived its job: %v", err)
	}
	// The store kept the records: a new job on the same file answers them.
	if _, err := p.Start(ctx, api.Job{Name: "c1", Type: JobCollector, Config: []byte(cfg)}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Query(ctx, q); err != nil || len(res.Records) != 4 {
		t.Errorf("after a restart: %d records, %v", len(res.Records), err)
	}
}

func TestCollectorStartFailures(t *testing.T) {
	dir := testkit.ShortTempDir(t, "fm-")
	ctx := t.Context()
	p := New(Options{DataDir: dir})
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	_, err := p.Start(ctx, api.Job{Name: "c1", Type: JobCollector, Config: []byte(`{}`)})
	if !(api.CodeOf(err) == api.FailedPrecondition) || !strings.Contains(err.Error(), "no stores") {
		t.Errorf("without stores: %v", err)
	}
	p = New(Options{DataDir: dir, OpenStore: openDuck})
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	busy, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	// A taken address (without SO_REUSEPORT on the other socket) fails the start, and
	// nothing stays: the socket file is gone and the store can be opened again.
	cfg := fmt.Sprintf(`{"listen":["127.0.0.1:%d"]}`, busy.LocalAddr().(*net.UDPAddr).Port)
	_, err = p.Start(ctx, api.Job{Name: "c1", Type: JobCollector, Config: []byte(cfg)})
	if !(api.CodeOf(err) == api.FailedPrecondition) || !strings.Contains(err.Error(), "config.listen[0]") {
		t.Errorf("busy address: %v", err)
	}
	if _, err := os.Stat(SocketPath(dir, "c1")); !os.IsNotExist(err) {
		t.Errorf("socket left after a failed start: %v", err)
	}
	if _, err := p.Start(ctx, api.Job{Name: "g1", Type: JobGen, Config: []byte(`{"interface":"nonexistent0"}`)}); !(api.CodeOf(err) == api.FailedPrecondition) ||
		!strings.Contains(err.Error(), "config.interface") {
		t.Errorf("generator on a missing interface: %v", err)
	}
	if _, err := p.Start(ctx, api.Job{Name: "x", Type: "flowmon-other"}); !(api.CodeOf(err) == api.InvalidArgument) {
		t.Errorf("unknown type: %v", err)
	}
}
