package config

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
)

// A plugin entry's jobs load with typed configs, and every bad job is refused with a message
// naming the plugin, the job and the fix.
func TestPluginJobsLoad(t *testing.T) {
	c := mustLoad(t, `plugins:
  - name: tick
    path: tick
    sha256: `+pin+`
    jobs:
      - name: counter
        type: ticker
        config: {every: 10, label: x}
      - {name: bare, type: ticker}
`, nil)
	want := []model.PluginJob{{Name: "counter", Type: "ticker", Config: map[string]any{"every": int64(10), "label": "x"}},
		{Name: "bare", Type: "ticker"}}
	if got := c.Plugins[0].Jobs; !reflect.DeepEqual(got, want) {
		t.Fatalf("jobs:\n got %#v\nwant %#v", got, want)
	}
	if js, _ := c.Plugins[0].Jobs[1].ConfigJSON(); string(js) != "{}" {
		t.Errorf("empty ConfigJSON: %s", js)
	}

	entry := "plugins:\n  - name: tick\n    path: tick\n    sha256: " + pin + "\n    jobs:\n"
	var many strings.Builder
	for i := range limits.MaxJobsPerPlugin + 1 {
		fmt.Fprintf(&many, "      - {name: j%d, type: ticker}\n", i)
	}
	tests := map[string]string{
		"      - {name: a, type: ticker}\n      - {name: a, type: ticker}\n":                                 `plugins[0].jobs[1].name: plugin "tick": job "a" is also plugins[0].jobs[0]; job names are unique per plugin`,
		"      - {name: 'a b', type: ticker}\n":                                                              `plugins[0].jobs[0]: plugin "tick": job name "a b" must be a letter or digit`,
		"      - {name: a, type: Ticker}\n":                                                                  `plugins[0].jobs[0]: plugin "tick": job "a": type "Ticker" must be a job type`,
		"      - {name: a, type: t, config: [1]}\n":                                                          `plugins[0].jobs[0].config: must be a mapping`,
		"      - {name: a, type: t, confg: {}}\n":                                                            `plugins[0].jobs[0].confg: unknown key`,
		"      - {name: a, type: t, config: {s: '" + strings.Repeat("x", limits.MaxJobConfigBytes) + "'}}\n": `more than 16384 (limits.MaxJobConfigBytes)`,
		many.String(): `plugins[0].jobs: plugin "tick" has 65 jobs, more than 64`,
	}
	for jobs, want := range tests {
		_, err := Load(context.Background(), Options{Data: []byte(entry + jobs)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: got %v, want %q", jobs, err, want)
		}
	}
	_, err := Load(context.Background(), Options{Data: []byte("plugins:\n  - name: tick\n    path: tick\n    sha256: " + pin + "\n    jobs: {name: a}\n")})
	if err == nil || !strings.Contains(err.Error(), "plugins[0].jobs: must be a list") {
		t.Errorf("jobs as a mapping: %v", err)
	}
}
