package metrics_test

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/metrics"
)

// Both observer interfaces are implemented.
var (
	_ vswitchd.Observer = (*metrics.Metrics)(nil)
	_ ovsdb.Observer    = (*metrics.Metrics)(nil)
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExposition(t *testing.T) {
	connected := false
	m := metrics.New("1.2.3", "embedded", func() bool { return connected })
	m.BatchCommitted(50, 30*time.Millisecond, 300*time.Millisecond, nil)
	m.BatchCommitted(3, 10*time.Millisecond, 0, errors.New("lost"))
	m.ReconcileDone(20*time.Millisecond, nil)
	m.Transacted(2*time.Millisecond, 7, nil)
	m.Reconnecting()
	m.Reconnecting()
	m.MonitorReconnecting()
	m.MemoryReleased()
	m.Statuses(map[model.State]int{model.StateReady: 12, model.StateError: 1})
	out := scrape(t, m)
	for _, want := range []string{
		`ovsplane_batch_size_bucket{le="64"} 2`,
		`ovsplane_batch_size_bucket{le="32"} 1`,
		`ovsplane_batch_size_sum 53`,
		`ovsplane_batch_commit_seconds_count{result="error"} 1`,
		`ovsplane_batch_commit_seconds_count{result="ok"} 1`,
		`ovsplane_batch_apply_seconds_count 1`,
		`ovsplane_batch_apply_seconds_sum 0.3`,
		`ovsplane_reconcile_duration_seconds_count{result="ok"} 1`,
		`ovsplane_ovsdb_transaction_operations_sum 7`,
		`ovsplane_ovsdb_reconnects_total{connection="transactions"} 2`,
		`ovsplane_ovsdb_reconnects_total{connection="monitor"} 1`,
		`ovsplane_memory_releases_total 1`,
		`ovsplane_objects{state="ready"} 12`,
		`ovsplane_objects{state="error"} 1`,
		`ovsplane_objects{state="pending"} 0`,
		`ovsplane_ovsdb_connected 0`,
		`ovsplane_build_info{mode="embedded",version="1.2.3"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want+" ") && !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	connected = true
	if out := scrape(t, m); !strings.Contains(out, "ovsplane_ovsdb_connected 1") {
		t.Error("ovsdb_connected does not follow the connection")
	}
}
