package daemoncmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
)

// statusRow is one line of `status` (and one element of its JSON array).
type statusRow struct {
	Object string `json:"object"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Bridge string `json:"bridge,omitempty"`
	State  string `json:"state"`
	Ofport int32  `json:"ofport,omitempty"`
	Error  string `json:"error,omitempty"`
}

// status prints the managed objects (all, or those named by the arguments) and returns
// errNotReady unless every one printed is ready and every argument matched.
func (r *runner) status(ctx context.Context) error {
	statuses, err := r.c.listStatus(ctx)
	if err != nil {
		return err
	}
	var rows []statusRow
	matched := make([]bool, len(r.o.args))
	for _, st := range statuses {
		if len(r.o.args) > 0 && !matches(st, r.o.args, matched) {
			continue
		}
		kind := st.Kind
		if kind == "" { // protojson leaves the zero value out
			kind = "KIND_UNSPECIFIED"
		}
		rows = append(rows, statusRow{
			Object: st.Key, Kind: strings.ToLower(strings.TrimPrefix(kind, "KIND_")),
			Name: st.Name, Bridge: st.Bridge, State: stateName(st.State),
			Ofport: st.Ofport, Error: st.Error,
		})
	}
	if err := r.printStatus(rows); err != nil {
		return err
	}
	ok := true
	for i, m := range matched {
		if !m {
			fmt.Fprintf(r.env.Stderr, "%s: status: %q is not an object ovsplaned manages (write KIND/NAME, like port/vhu1, or NAME)\n", r.o.progName, r.o.args[i])
			ok = false
		}
	}
	for _, row := range rows {
		ok = ok && row.State == "ready"
	}
	if !ok {
		return errNotReady
	}
	return nil
}

// matches reports whether st is named by one of args ("KIND/NAME" or "NAME"), marking the
// arguments that matched.
func matches(st wireStatus, args []string, matched []bool) bool {
	hit := false
	for i, a := range args {
		if a == st.Key || (!strings.Contains(a, "/") && a == st.Name) {
			matched[i], hit = true, true
		}
	}
	return hit
}

func (r *runner) printStatus(rows []statusRow) error {
	if r.o.format == "json" {
		if rows == nil {
			rows = []statusRow{}
		}
		enc := json.NewEncoder(r.env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tSTATE\tOFPORT\tERROR")
	for _, row := range rows {
		ofport := ""
		if row.Ofport != 0 {
			ofport = strconv.Itoa(int(row.Ofport))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", row.Object, row.State, ofport, oneLine(row.Error))
	}
	return tw.Flush()
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
