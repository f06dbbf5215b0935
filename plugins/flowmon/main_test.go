package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/internal/testkit"
)

// serve runs a query socket at <dir>/plugin-data/flowmon/<job>.sock answering with run and
// counters that grow by 100 records per status call.
func serve(t *testing.T, dir, job string, run func(context.Context, query.Query) (query.Result, error)) string {
	t.Helper()
	pdir := filepath.Join(dir, "plugin-data", "flowmon")
	if err := mkdir(pdir); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(pdir, job+".sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	calls := uint64(0)
	start := time.Now()
	srv := &http.Server{Handler: query.NewHandler(query.ServeOptions{Run: run, Status: func() query.Status {
		calls++
		return query.Status{Job: job, Store: "embedded", Started: start, Time: start.Add(time.Duration(calls) * time.Second),
			Counters: map[string]uint64{"records": 100 * calls, "datagrams": 10 * calls, "dropped": 0}}
	}}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock
}

func cli(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := runCLI(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestQueryCommand(t *testing.T) {
	dir := testkit.ShortTempDir(t, "fmcli-")
	var asked query.Query
	serve(t, dir, "c1", func(_ context.Context, q query.Query) (query.Result, error) {
		asked = q
		return query.Result{Groups: []query.Group{{Key: "10.0.0.1", Bytes: 1500, Packets: 3, Flows: 1}}}, nil
	})
	code, out, errOut := cli("query", "--data-dir", dir, "--since", "2h", "--dst", "10.0.0.0/8", "--proto", "udp", "--top", "src", "--by", "packets", "-n", "5", "--format", "csv")
	if code != 0 || out != "src,bytes,packets,flows\n10.0.0.1,1500,3,1\n" {
		t.Fatalf("query: %d %q %q", code, out, errOut)
	}
	if asked.Kind != query.Top || asked.GroupBy != query.KeySrc || asked.Metric != query.Packets || asked.Limit != 5 ||
		asked.To.Sub(asked.From) != 2*time.Hour || len(asked.Filter.Dst) != 1 || asked.Filter.Dst[0] != netip.MustParsePrefix("10.0.0.0/8") ||
		len(asked.Filter.Protos) != 1 || asked.Filter.Protos[0] != 17 {
		t.Fatalf("the collector was asked %+v", asked)
	}
	if code, out, _ := cli("query", "--job", "c1", "--data-dir", dir, "--top", "dst", "--format", "json"); code != 0 || !strings.Contains(out, `"kind":"top"`) {
		t.Fatalf("json: %d %q", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"query", "--data-dir", dir, "--src", "nonsense"}, 2, "src:"},
		{[]string{"query", "--data-dir", dir, "--format", "xml"}, 2, "format"},
		{[]string{"query", "--data-dir", dir, "--socket", "/x", "--job", "c1"}, 2, "one of --socket"},
		{[]string{"query", "--data-dir", filepath.Join(dir, "none")}, 2, "no collector query socket"},
		{[]string{"query", "--socket", filepath.Join(dir, "gone.sock")}, 1, "flowmon-collector job running"},
		{[]string{"query", "--daemon", "tcp:1.2.3.4:1"}, 2, "unix:PATH"},
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"check", "collector", `{"workers":0,"listen":["x"]}`}, 2, "config.listen[0]"},
		{[]string{"check", "gen", `{"interface":"v0","frame_size":2000}`}, 2, "config.frame_size"},
		{[]string{"gen", "--interface", "v0", "--frame-size", "10"}, 2, "frame_size"},
		{[]string{"top", "--data-dir", dir, "--interval", "1ms"}, 2, "--interval"},
	} {
		code, _, errOut := cli(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	if code, out, errOut := cli("check", "collector", `{"listen":["0.0.0.0:2055"]}`); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("check: %d %q %q", code, out, errOut)
	}
}

func TestTopCommand(t *testing.T) {
	dir := testkit.ShortTempDir(t, "fmtop-")
	serve(t, dir, "c1", func(_ context.Context, q query.Query) (query.Result, error) {
		if q.Kind == query.Series {
			return query.Result{Points: []query.Point{{Start: q.From, Bytes: 12500, Packets: 100, Flows: 4}}}, nil
		}
		return query.Result{Groups: []query.Group{{Key: "10.0.0.1", Bytes: 10000, Packets: 80, Flows: 3}, {Key: "10.0.0.2", Bytes: 2500, Packets: 20, Flows: 1}}}, nil
	})
	c := query.NewClient(filepath.Join(dir, "plugin-data", "flowmon", "c1.sock"), 0)
	var out bytes.Buffer
	o := topOptions{interval: 100 * time.Millisecond, window: 10 * time.Second, rows: 5, by: query.Bytes, key: query.KeySrc, frames: 2}
	if err := top(t.Context(), c, &out, o); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	frames := strings.Split(s, "flowmon top")
	if len(frames) != 3 {
		t.Fatalf("want 2 frames:\n%s", s)
	}
	// 12500 bytes over 10 s is 10 kbit/s; the second frame has rates (100 records per second
	// of the status clock).
	for _, want := range []string{"10.00 kbit/s", "10 pkt/s", "4 flows", "10.0.0.1", "80.0%", "20.0%"} {
		if !strings.Contains(frames[1], want) {
			t.Errorf("first frame lacks %q:\n%s", want, frames[1])
		}
	}
	if !strings.Contains(frames[1], "records -") || !strings.Contains(frames[2], "records 100/s") {
		t.Errorf("rates: first frame has none, the second 100/s:\n%s", s)
	}
}

func mkdir(p string) error { return os.MkdirAll(p, 0o750) }
