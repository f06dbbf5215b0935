package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// The watcher queues are served as gauges and counters per plugin, read at every scrape.
func TestWatchCollector(t *testing.T) {
	m := New("v", "embedded", nil)
	var queues []WatcherQueue
	m.RegisterWatchers(func() []WatcherQueue { return queues })
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != 200 {
			t.Fatalf("scrape: %d\n%s", rec.Code, body)
		}
		return string(body)
	}
	if out := scrape(); strings.Contains(out, "ovsplane_watch_pending{") {
		t.Errorf("a queue exported without watchers:\n%s", out)
	}
	queues = []WatcherQueue{{Plugin: "dsa", Pending: 31, MaxPending: 32, Overflows: 3, Dropped: 1700, Events: 12,
		Statuses: map[string]int{"warning": 2, "info": 5}, StatusesRefused: 4}}
	out := scrape()
	for _, want := range []string{
		"# TYPE ovsplane_watch_pending gauge", `ovsplane_watch_pending{plugin="dsa"} 31`,
		`ovsplane_watch_pending_max{plugin="dsa"} 32`,
		"# TYPE ovsplane_watch_overflows_total counter", `ovsplane_watch_overflows_total{plugin="dsa"} 3`,
		`ovsplane_watch_dropped_total{plugin="dsa"} 1700`, `ovsplane_watch_events_total{plugin="dsa"} 12`,
		"# TYPE ovsplane_plugin_interface_status gauge", `ovsplane_plugin_interface_status{level="info",plugin="dsa"} 5`,
		`ovsplane_plugin_interface_status{level="warning",plugin="dsa"} 2`, `ovsplane_plugin_interface_status{level="error",plugin="dsa"} 0`,
		`ovsplane_watch_statuses_refused_total{plugin="dsa"} 4`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
