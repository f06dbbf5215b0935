package daemoncmd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// wireJobInfo and wireJobMetric are the API's JobInfo and JobMetric as the server writes them
// (protojson names; enums by name; the sample time as RFC 3339 text).
type wireJobInfo struct {
	Plugin     string          `json:"plugin"`
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Port       string          `json:"port"`
	State      string          `json:"state"`
	Error      string          `json:"error"`
	Status     string          `json:"status"`
	Starts     int32           `json:"starts"`
	SampleTime string          `json:"sampleTime"`
	Metrics    []wireJobMetric `json:"metrics"`
}

type wireJobMetric struct {
	Name   string            `json:"name"`
	Kind   string            `json:"kind"`
	Value  json.Number       `json:"value"` // printed as the daemon wrote it (finite: the daemon refuses others); "" is 0, omitted
	Labels map[string]string `json:"labels"`
}

func (c *apiClient) pluginStats(ctx context.Context, plugin string) ([]wireJobInfo, error) {
	req := struct {
		Plugin string `json:"plugin"`
	}{plugin}
	var resp struct {
		Jobs []wireJobInfo `json:"jobs"`
	}
	if err := c.call(ctx, "PluginStats", req, &resp); err != nil {
		return nil, err
	}
	return resp.Jobs, nil
}

// jobRow is one job as `plugin stats` shows it (and one element of its JSON array).
type jobRow struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Port       string      `json:"port,omitempty"`
	State      string      `json:"state"`
	Error      string      `json:"error,omitempty"`
	Status     string      `json:"status,omitempty"`
	Starts     int32       `json:"starts"`
	SampleTime string      `json:"sample_time,omitempty"`
	Metrics    []metricRow `json:"metrics,omitempty"`
}

type metricRow struct {
	Name   string            `json:"name"`
	Kind   string            `json:"kind"`
	Value  json.Number       `json:"value"`
	Labels map[string]string `json:"labels,omitempty"`
}

// pluginStats runs `plugin stats NAME`: exit 0 when every job is running.
func (r *runner) pluginStats(ctx context.Context, name string) error {
	jobs, err := r.c.pluginStats(ctx, name)
	if err != nil {
		return err
	}
	rows := make([]jobRow, 0, len(jobs))
	for _, j := range jobs {
		row := jobRow{Name: j.Name, Type: j.Type, Port: j.Port, State: jobStateName(j.State), Error: j.Error,
			Status: j.Status, Starts: j.Starts, SampleTime: j.SampleTime}
		for _, m := range j.Metrics {
			if m.Value == "" { // protojson omits a zero value: the metric is 0, not blank
				m.Value = "0"
			}
			row.Metrics = append(row.Metrics, metricRow{Name: m.Name, Kind: metricKindName(m.Kind), Value: m.Value, Labels: m.Labels})
		}
		rows = append(rows, row)
	}
	if err := r.printJobs(rows); err != nil {
		return err
	}
	for _, row := range rows {
		if row.State != "running" {
			return errNotReady
		}
	}
	return nil
}

func (r *runner) printJobs(rows []jobRow) error {
	if r.o.format == "json" {
		enc := json.NewEncoder(r.env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tTYPE\tPORT\tSTATE\tSTARTS\tSAMPLED")
	for _, j := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", j.Name, j.Type, dash(j.Port), j.State, j.Starts, dash(j.SampleTime))
		if j.Error != "" {
			fmt.Fprintf(tw, "  error: %s\t\t\t\t\t\n", oneLine(j.Error))
		}
		for _, m := range j.Metrics {
			fmt.Fprintf(tw, "  %s%s %s %s\t\t\t\t\t\n", m.Name, labelText(m.Labels), m.Value, m.Kind)
		}
	}
	return tw.Flush()
}

// labelText is a metric's labels as Prometheus writes them: {k="v",…}, sorted; "" for none.
func labelText(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+strconv.Quote(l[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func jobStateName(s string) string {
	if n, ok := strings.CutPrefix(s, "JOB_STATE_"); ok && n != "UNSPECIFIED" {
		return strings.ToLower(n)
	}
	return "unknown"
}

func metricKindName(s string) string {
	if n, ok := strings.CutPrefix(s, "METRIC_KIND_"); ok && n != "UNSPECIFIED" {
		return strings.ToLower(n)
	}
	return "untyped"
}
