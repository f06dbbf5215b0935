package daemoncmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// pluginRow is one plugin as `plugin list` and `plugin status` show it (and one element of
// their JSON arrays).
type pluginRow struct {
	Name         string   `json:"name"`
	Version      string   `json:"version,omitempty"`
	State        string   `json:"state"`
	Reason       string   `json:"reason,omitempty"`
	Types        []string `json:"types,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	Restarts     int32    `json:"restarts"`
	LastError    string   `json:"last_error,omitempty"`
	PID          int32    `json:"pid,omitempty"`
}

// plugin runs `plugin list`, `plugin status [NAME]` or `plugin stats NAME`.
func (r *runner) plugin(ctx context.Context) error {
	if len(r.o.args) == 0 {
		return &usageError{"expected list, status or stats"}
	}
	sub, args := r.o.args[0], r.o.args[1:]
	switch {
	case sub == "stats" && len(args) == 1:
		return r.pluginStats(ctx, args[0])
	case sub == "stats":
		return &usageError{"stats: expected one plugin name"}
	case sub == "list" && len(args) == 0:
	case sub == "status" && len(args) <= 1:
	case sub == "list" || sub == "status":
		return &usageError{fmt.Sprintf("%s: too many arguments", sub)}
	default:
		return &usageError{fmt.Sprintf("%q: expected list, status or stats", sub)}
	}
	plugins, err := r.c.listPlugins(ctx)
	if err != nil {
		return err
	}
	rows := make([]pluginRow, 0, len(plugins))
	for _, p := range plugins {
		if len(args) == 1 && p.Name != args[0] {
			continue
		}
		rows = append(rows, pluginRow{Name: p.Name, Version: p.Version,
			State: pluginStateName(p.State), Reason: p.Reason, Types: p.Types,
			Capabilities: p.Capabilities, Restarts: p.Restarts, LastError: p.LastError, PID: p.Pid})
	}
	if len(args) == 1 && len(rows) == 0 {
		fmt.Fprintf(r.env.Stderr, "%s: plugin status: no plugin named %q in ovsplaned's config (`%s plugin list` lists them)\n",
			r.o.progName, args[0], r.o.progName)
		return errNotReady
	}
	if err := r.printPlugins(sub, rows); err != nil {
		return err
	}
	if sub == "status" {
		for _, row := range rows {
			if row.State != "running" {
				return errNotReady
			}
		}
	}
	return nil
}

func (r *runner) printPlugins(sub string, rows []pluginRow) error {
	if r.o.format == "json" {
		enc := json.NewEncoder(r.env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if sub == "status" {
		return printPluginDetails(r, rows)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSTATE\tTYPES\tRESTARTS")
	for _, p := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", p.Name, dash(p.Version), p.State, dash(strings.Join(p.Types, ",")), p.Restarts)
	}
	return tw.Flush()
}

// printPluginDetails prints one block per plugin: its name, then one "  key: value" line per
// field with the values aligned, empty fields left out; blocks are separated by a blank line.
func printPluginDetails(r *runner, rows []pluginRow) error {
	var b strings.Builder
	for i, p := range rows {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Name + "\n")
		field := func(k, v string) {
			if v != "" {
				fmt.Fprintf(&b, "  %-13s %s\n", k+":", oneLine(v))
			}
		}
		field("state", p.State)
		field("reason", p.Reason)
		field("version", p.Version)
		field("types", strings.Join(p.Types, ", "))
		field("capabilities", strings.Join(p.Capabilities, ", "))
		if p.PID != 0 {
			field("pid", strconv.Itoa(int(p.PID)))
		}
		field("restarts", strconv.Itoa(int(p.Restarts)))
		field("last error", p.LastError)
	}
	_, err := io.WriteString(r.env.Stdout, b.String())
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
