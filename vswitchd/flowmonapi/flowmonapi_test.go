package flowmonapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/flowmonapi"
)

var now = time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)

// serveCollector serves a query socket named job in dir answering with run.
func serveCollector(t *testing.T, dir, job string, run func(context.Context, query.Query) (query.Result, error)) {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(dir, job+flowmonapi.SocketSuffix))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: query.NewHandler(query.ServeOptions{Run: run,
		Status: func() query.Status { return query.Status{Job: job, Counters: map[string]uint64{"stored": 42}} }}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// get asks the handler and returns the status and the decoded JSON body.
func get(t *testing.T, h http.Handler, target string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, target, nil))
	body, _ := io.ReadAll(rec.Body)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("GET %s: %d %q: %v", target, rec.Code, body, err)
	}
	return rec.Code, m
}

func TestForward(t *testing.T) {
	dir := testkit.ShortTempDir(t, "fm-")
	h := flowmonapi.New(flowmonapi.Options{SocketDir: dir, Now: func() time.Time { return now }})
	code, m := get(t, h, "/flowmon/v1/query?since=1h")
	if code != http.StatusBadRequest || m["code"] != "failed_precondition" || !strings.Contains(m["message"].(string), "no flowmon-collector job runs") {
		t.Fatalf("no collector: %d %v", code, m)
	}
	var asked query.Query
	serveCollector(t, dir, "c1", func(_ context.Context, q query.Query) (query.Result, error) {
		asked = q
		return query.Result{Groups: []query.Group{{Key: "10.0.0.1", Bytes: 100, Packets: 2, Flows: 1}}}, nil
	})
	code, m = get(t, h, "/flowmon/v1/query?since=15m&top=src&src=10.0.0.0/8&n=3")
	if code != http.StatusOK || m["kind"] != "top" || len(m["groups"].([]any)) != 1 {
		t.Fatalf("top: %d %v", code, m)
	}
	// The daemon resolved since against its clock and forwarded an absolute range.
	if !asked.From.Equal(now.Add(-15*time.Minute)) || !asked.To.Equal(now) || asked.Limit != 3 || asked.GroupBy != query.KeySrc || len(asked.Filter.Src) != 1 {
		t.Fatalf("collector was asked %+v", asked)
	}
	code, m = get(t, h, "/flowmon/v1/query?top=colour")
	if code != http.StatusBadRequest || m["code"] != "invalid_argument" || !strings.Contains(m["message"].(string), "top:") {
		t.Fatalf("bad query: %d %v", code, m)
	}
	code, m = get(t, h, "/flowmon/v1/status")
	if code != http.StatusOK || m["job"] != "c1" {
		t.Fatalf("status: %d %v", code, m)
	}
	serveCollector(t, dir, "c2", func(context.Context, query.Query) (query.Result, error) {
		return query.Result{}, context.DeadlineExceeded
	})
	code, m = get(t, h, "/flowmon/v1/query")
	if code != http.StatusBadRequest || !strings.Contains(m["message"].(string), "name one with job=NAME") {
		t.Fatalf("two collectors: %d %v", code, m)
	}
	code, m = get(t, h, "/flowmon/v1/query?job=c2")
	if code != http.StatusServiceUnavailable || !strings.Contains(m["message"].(string), "took longer") {
		t.Fatalf("slow store: %d %v", code, m)
	}
	code, m = get(t, h, "/flowmon/v1/query?job=c9")
	if code != http.StatusNotFound {
		t.Fatalf("unknown job: %d %v", code, m)
	}
	code, m = get(t, h, "/flowmon/v1/collectors")
	if cs, _ := m["collectors"].([]any); code != http.StatusOK || len(cs) != 2 {
		t.Fatalf("collectors: %d %v", code, m)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/flowmon/v1/query", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/flowmon/", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `id="search"`) || rec.Header().Get("Content-Security-Policy") == "" {
		t.Fatalf("page: %d %q", rec.Code, rec.Body.String())
	}
}

func TestFlowmonPathsAreReads(t *testing.T) {
	for p, write := range map[string]bool{"/flowmon/": false, "/flowmon": false, "/flowmon/v1/query": false,
		"/flowmon/../ovsplane.v1.SwitchService/ApplyPort": true, "/flowmonx": true} {
		if got := apiserver.IsWrite(p); got != write {
			t.Errorf("IsWrite(%q) = %v, want %v", p, got, write)
		}
	}
}
