package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRegisterPipeline(t *testing.T) {
	m := New("test", "ovs", nil)
	p := Pipeline{Applying: 3, Depth: 4, InFlightLimit: 1, SizeLimit: 200, ApplyFixed: 750 * time.Millisecond, ApplyPerRequest: 2 * time.Millisecond}
	m.RegisterPipeline(func() Pipeline { return p })
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		b, _ := io.ReadAll(rec.Body)
		return string(b)
	}
	body := scrape()
	for _, line := range []string{"ovsplane_batch_inflight 3", "ovsplane_batch_depth 4", "ovsplane_batch_inflight_limit 1", "ovsplane_batch_size_limit 200",
		"ovsplane_batch_apply_fixed_seconds 0.75", "ovsplane_batch_apply_per_request_seconds 0.002"} {
		if !strings.Contains(body, "\n"+line+"\n") {
			t.Errorf("no %q in /metrics:\n%s", line, body)
		}
	}
	p.Applying = 0 // read at every scrape
	if body := scrape(); !strings.Contains(body, "\novsplane_batch_inflight 0\n") {
		t.Errorf("ovsplane_batch_inflight not read again at the scrape:\n%s", body)
	}
}
