package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/metrics"
)

// exportedNames builds the registry as run does (metrics.New, RegisterJobs, RegisterWatchers),
// drives every observer the daemon drives, with one plugin job (a counter and a gauge in its
// stats) and one watcher plugin, and returns every series name a scrape of it shows (a
// histogram's _bucket, _sum and _count, for example).
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	met := metrics.New(model.Version, string(model.ModeEmbedded), func() bool { return true })
	met.RegisterJobs(func() []model.JobInfo {
		return []model.JobInfo{{Plugin: "stripe", Name: "s1", Type: "stripe", State: model.JobRunning,
			SampleTime: time.Unix(1_800_000_000, 0), Metrics: []model.JobMetric{
				{Name: "rx_packets", Kind: "counter", Value: 7},
				{Name: "queue_depth", Kind: "gauge", Value: 3, Labels: map[string]string{"queue": "0"}},
			}}}
	})
	met.RegisterWatchers(func() []metrics.WatcherQueue {
		return []metrics.WatcherQueue{{Plugin: "flowmon", Pending: 1, MaxPending: 10, Batches: 2, Events: 3,
			Statuses: map[string]int{"info": 1, "warning": 0, "error": 0}}}
	})
	met.BatchCommitted(4, time.Millisecond, 2*time.Millisecond, nil)
	met.BatchCommitted(1, time.Millisecond, 0, errors.New("refused"))
	met.ReconcileDone(time.Millisecond, nil)
	met.Transacted(time.Millisecond, 3, nil)
	met.Reconnecting()
	met.Statuses(map[model.State]int{model.StateReady: 2})
	// Scrape it as Prometheus does: every series line names a metric.
	rec := httptest.NewRecorder()
	met.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scraping the daemon's registry: %d %s", rec.Code, rec.Body.String())
	}
	names := map[string]bool{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		names[line[:strings.IndexAny(line, "{ ")]] = true
	}
	return names
}

var (
	// promString is a PromQL string literal; promBraces a selector's label matchers;
	// promRange a range or subquery; promGrouping the label list of by/without/on/ignoring/
	// group_left/group_right; grafanaVar a Grafana variable ($x, ${x}, $__rate_interval).
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promBraces   = regexp.MustCompile(`\{[^{}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	grafanaVar   = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	nameMatcher  = regexp.MustCompile(`__name__\s*(=~|!~|=|!=)\s*"((?:[^"\\]|\\.)*)"`)
)

// promKeywords are PromQL words that are not metric names.
var promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
	"and", "or", "unless", "offset", "atan2", "inf", "nan", "start", "end"}

// metricRefs returns the metric names expr selects by name, and the regular expressions of
// its __name__=~ matchers (a selector of a whole family, like the plugins' job stats).
func metricRefs(expr string) (names []string, patterns []string) {
	for _, m := range nameMatcher.FindAllStringSubmatch(expr, -1) {
		switch m[1] {
		case "=":
			names = append(names, m[2])
		case "=~":
			patterns = append(patterns, m[2])
		}
	}
	// Grafana's label_values(SELECTOR, LABEL): the label is no metric.
	if inner, ok := strings.CutPrefix(strings.TrimSpace(expr), "label_values("); ok {
		if k := strings.LastIndex(inner, ","); k >= 0 {
			expr = inner[:k]
		}
	}
	s := grafanaVar.ReplaceAllString(expr, "1")
	s = promString.ReplaceAllString(s, `""`)
	for _, re := range []*regexp.Regexp{promBraces, promRange, promGrouping} {
		s = re.ReplaceAllString(s, " ")
	}
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // a number's exponent or a duration's unit
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or aggregation
		}
		if slices.Contains(promKeywords, strings.ToLower(word)) {
			continue
		}
		names = append(names, word)
	}
	return names, patterns
}

// queries returns every PromQL query of the dashboard: panel targets (rows' nested panels
// included) and the variables' label_values queries, keyed by where they are.
func queries(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	}
	type panel struct {
		ID      int      `json:"id"`
		Type    string   `json:"type"`
		Title   string   `json:"title"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var dash struct {
		UID        string  `json:"uid"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s is not a dashboard: %v", path, err)
	}
	if dash.UID == "" {
		t.Errorf("%s: no uid (Grafana would make one up at every import)", path)
	}
	out := map[string]string{}
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d is used twice (%q)", p.ID, p.Title)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q, query %s: empty expr", p.Title, tg.RefID)
				}
				out["panel "+p.Title+" "+tg.RefID] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: query: %v", v.Name, err)
		}
		out["variable "+v.Name] = q.Query
	}
	return out
}

// Every query of contrib/grafana/ovsplane.json names metrics the daemon exports: each metric
// name is one a scrape of the daemon's registry shows, and each __name__=~ family matches at
// least one.
func TestGrafanaDashboardNamesExportedMetrics(t *testing.T) {
	exported := exportedNames(t)
	qs := queries(t, "../../contrib/grafana/ovsplane.json")
	if len(qs) < 20 {
		t.Fatalf("the dashboard has %d queries; it should cover batches, acks, latency, objects, plugins", len(qs))
	}
	used := map[string]bool{}
	for where, expr := range qs {
		names, patterns := metricRefs(expr)
		if len(names) == 0 && len(patterns) == 0 {
			t.Errorf("%s: %q selects no metric", where, expr)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("%s: %q names %s, which the daemon does not export", where, expr, n)
			}
		}
		for _, p := range patterns {
			re, err := regexp.Compile("^(?:" + p + ")$")
			if err != nil {
				t.Errorf("%s: __name__=~%q: %v", where, p, err)
				continue
			}
			matched := false
			for n := range exported {
				matched = matched || re.MatchString(n)
			}
			if !matched {
				t.Errorf("%s: __name__=~%q matches no exported metric", where, p)
			}
		}
	}
	// The dashboard shows what issue 19 asks for: batches, acknowledgements, latency,
	// per-object state, plugin health and stats.
	for _, n := range []string{"ovsplane_batch_commit_seconds_count", "ovsplane_batch_apply_seconds_count",
		"ovsplane_batch_apply_seconds_bucket", "ovsplane_batch_commit_seconds_bucket", "ovsplane_objects",
		"ovsplane_jobs_up", "ovsplane_watch_pending", "ovsplane_plugin_interface_status", "ovsplane_ovsdb_connected"} {
		if !used[n] {
			t.Errorf("no query of the dashboard uses %s", n)
		}
	}
}

// The extractor finds the names in the shapes the dashboard uses, and only those.
func TestMetricRefs(t *testing.T) {
	for _, tc := range []struct {
		expr, names, patterns string
	}{
		{`histogram_quantile(0.99, sum by (le) (rate(a_bucket{instance=~"$instance"}[$__rate_interval])))`, "a_bucket", ""},
		{`sum(rate(x_sum[5m])) / sum(rate(x_count[1m:10s] offset 1h))`, "x_sum x_count", ""},
		{`count(up == 0) or vector(0)`, "up", ""},
		{`time() - ts{plugin=~"$plugin"}`, "ts", ""},
		{`rate({__name__=~"ovsplane_job_.+_total",a="b"}[1m])`, "", "ovsplane_job_.+_total"},
		{`label_values(ovsplane_build_info, instance)`, "ovsplane_build_info", ""},
		{`sum without (job) (m1) * on (instance) group_left (mode) m2 > bool 1e3`, "m1 m2", ""},
	} {
		names, patterns := metricRefs(tc.expr)
		if got := strings.Join(names, " "); got != tc.names {
			t.Errorf("metricRefs(%q) names = %q, want %q", tc.expr, got, tc.names)
		}
		if got := strings.Join(patterns, " "); got != tc.patterns {
			t.Errorf("metricRefs(%q) patterns = %q, want %q", tc.expr, got, tc.patterns)
		}
	}
}
