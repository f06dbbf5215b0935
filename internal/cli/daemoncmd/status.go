package daemoncmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
)

// statusRow is one line of `status` (and one element of its JSON array). A watcher plugin's
// status of an interface is a row of kind "watched" (object "interface/NAME") with Plugin,
// Level, Summary, Details and Owner and no State.
type statusRow struct {
	Object  string            `json:"object"`
	Kind    string            `json:"kind"`
	Name    string            `json:"name"`
	Bridge  string            `json:"bridge,omitempty"`
	State   string            `json:"state,omitempty"`
	Ofport  int32             `json:"ofport,omitempty"`
	Error   string            `json:"error,omitempty"`
	Plugin  string            `json:"plugin,omitempty"`
	Port    string            `json:"port,omitempty"`
	Owner   string            `json:"owner,omitempty"`
	Level   string            `json:"level,omitempty"`
	Summary string            `json:"summary,omitempty"`
	Details map[string]string `json:"details,omitempty"`
}

// kindWatched is the kind of a watched-status row.
const kindWatched = "watched"

// status prints the managed objects (all, or those named by the arguments), then the watcher
// plugins' statuses of the interfaces (managed or not) they name, and returns errNotReady
// unless every managed object printed is ready and every argument matched something. A
// watched status, whatever its level, does not change the exit status: it is a plugin's view,
// not the object's state.
func (r *runner) status(ctx context.Context) error {
	statuses, watched, err := r.c.listStatus(ctx)
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
	var watchedRows []statusRow
	for _, w := range watched {
		key := wireStatus{Kind: "KIND_INTERFACE", Name: w.Interface, Key: "interface/" + w.Interface}
		if len(r.o.args) > 0 && !matches(key, r.o.args, matched) {
			continue
		}
		watchedRows = append(watchedRows, statusRow{Object: key.Key, Kind: kindWatched, Name: w.Interface, Bridge: w.Bridge,
			Plugin: w.Plugin, Port: w.Port, Owner: w.Owner, Level: w.Level, Summary: w.Summary, Details: w.Details})
	}
	if err := r.printStatus(rows, watchedRows); err != nil {
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

func (r *runner) printStatus(rows, watched []statusRow) error {
	if r.o.format == "json" {
		all := append(append([]statusRow{}, rows...), watched...)
		enc := json.NewEncoder(r.env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
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
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(watched) == 0 {
		return nil
	}
	// The watcher plugins' views, managed interfaces or not (a port ovs-vsctl or os-vif made).
	fmt.Fprintln(r.env.Stdout)
	tw = tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tINTERFACE\tLEVEL\tSUMMARY")
	for _, row := range watched {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", row.Plugin, row.Name, row.Level, oneLine(row.Summary))
	}
	return tw.Flush()
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
