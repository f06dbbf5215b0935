package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/collect/nftest"
	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/flowmon/internal/flowmonplugin"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestCollectorJobPostgres runs a flowmon-collector job of the binary's plugin with store kind
// postgres on a private PostgreSQL 15, sends it NetFlow v5 records and finds them through
// `flowmon query` on the job's socket.
func TestCollectorJobPostgres(t *testing.T) {
	pg := lab.StartPostgres(t)
	dir := testkit.ShortTempDir(t, "fmpg-")
	p := flowmonplugin.New(flowmonplugin.Options{OpenStore: openStore, DataDir: dir})
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
	cfg, err := json.Marshal(flowmonplugin.CollectorConfig{Listen: []string{fmt.Sprintf("127.0.0.1:%d", port)}, Workers: 1, FlushMillis: 20,
		Store: flowmonplugin.StoreConfig{Kind: flowmonplugin.StorePostgres, DSN: pg.ConnString("postgres"), RetentionDays: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start(t.Context(), api.Job{Name: "pg1", Type: flowmonplugin.JobCollector, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	recs := []flow.Record{{Start: now.Add(-2 * time.Second).UnixNano(), End: now.Add(-time.Second).UnixNano(), Src: netip.MustParseAddr("192.0.2.1"),
		Dst: netip.MustParseAddr("192.0.2.2"), Proto: 6, SrcPort: 1234, DstPort: 80, Bytes: 4242, Packets: 7}}
	conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(nftest.AppendV5(nil, nftest.V5Header{SysUptime: 10000, UnixSecs: uint32(now.Unix())}, recs)); err != nil {
		t.Fatal(err)
	}
	sock := flowmonplugin.SocketPath(dir, "pg1")
	lab.WaitFor(t, 30*time.Second, "the record in PostgreSQL", func(ctx context.Context) error {
		res, err := query.NewClient(sock, 0).Query(ctx, query.Query{Kind: query.Flows, From: now.Add(-time.Hour), To: now.Add(time.Hour), Limit: 5})
		if err != nil {
			return err
		}
		if len(res.Records) != 1 {
			return fmt.Errorf("%d records", len(res.Records))
		}
		return nil
	})
	code, out, errOut := cli("query", "--socket", sock, "--since", "1h", "--dport", "80", "--format", "csv")
	want := fmt.Sprintf("end,start,exporter,bridge,in_port,out_port,proto,src,sport,dst,dport,bytes,packets\n%s,%s,127.0.0.1,,,,tcp,192.0.2.1,1234,192.0.2.2,80,4242,7\n",
		now.Add(-time.Second).UTC().Format(time.RFC3339Nano), now.Add(-2*time.Second).UTC().Format(time.RFC3339Nano))
	if code != 0 || out != want {
		t.Fatalf("flowmon query: %d\n%s\nwant\n%s\nstderr %s", code, out, want, errOut)
	}
}
