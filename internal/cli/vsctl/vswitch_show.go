package vsctl

import (
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// showTable is one table of "show": the column that names its rows (empty: the row's UUID is
// printed) and the columns shown under each row, in order.
type showTable struct {
	table, nameCol string
	cols           []string
}

func showTables() []showTable {
	return []showTable{
		{"Open_vSwitch", "", []string{"manager_options", "bridges", "ovs_version"}},
		{"Bridge", "name", []string{"controller", "fail_mode", "datapath_type", "ports"}},
		{"Port", "name", []string{"tag", "trunks", "interfaces"}},
		{"Interface", "name", []string{"type", "options", "error", "bfd_status"}},
		{"Controller", "target", []string{"is_connected"}},
		{"Manager", "target", []string{"is_connected"}},
	}
}

// cmdShow prints the overview of the database, as ovs-vsctl's show does: each table's rows
// nested under the rows that refer to them, references in the referring column's (UUID)
// order, columns with default values left out.
func cmdShow(c *Context, _ *vsView) error {
	tables := map[string]showTable{}
	rows := map[string]map[string]*dbcmd.Row{}
	var first []*dbcmd.Row
	var reqs []dbcmd.TableColumns
	for _, st := range showTables() {
		cols := append([]string{}, st.cols...)
		if st.nameCol != "" {
			cols = append(cols, st.nameCol)
		}
		reqs = append(reqs, dbcmd.TableColumns{Table: st.table, Columns: cols})
	}
	if err := c.DB.Prefetch(c.Ctx, reqs...); err != nil {
		return err
	}
	for i, st := range showTables() {
		tables[st.table] = st
		cols := append([]string{}, st.cols...)
		if st.nameCol != "" {
			cols = append(cols, st.nameCol)
		}
		all, err := c.DB.All(c.Ctx, st.table, cols...)
		if err != nil {
			return err
		}
		m := make(map[string]*dbcmd.Row, len(all))
		for _, r := range all {
			m[r.UUID()] = r
		}
		rows[st.table] = m
		if i == 0 {
			first = all
		}
	}
	var b strings.Builder
	shown := map[string]bool{}
	var showRow func(r *dbcmd.Row, level int)
	showRow = func(r *dbcmd.Row, level int) {
		ts := r.Table()
		st := tables[ts.Name]
		b.WriteString(strings.Repeat(" ", 4*level))
		if st.nameCol != "" {
			d, _ := r.Loaded(st.nameCol)
			b.WriteString(ts.Name + " " + datum.FormatDatum(ts.Columns[st.nameCol].Type, d, datum.DataString))
		} else {
			b.WriteString(r.UUID())
		}
		b.WriteByte('\n')
		if shown[ts.Name] {
			return
		}
		shown[ts.Name] = true
		for _, col := range st.cols {
			cs := ts.Columns[col]
			d, _ := r.Loaded(col)
			if ref := cs.Type.Key.RefTable; cs.Type.Key.Type == datum.TypeUUID && ref != "" {
				if _, ok := tables[ref]; ok {
					for _, k := range d.Keys {
						if rr := rows[ref][k.Str]; rr != nil {
							showRow(rr, level+1)
						}
					}
					continue
				}
			}
			if !d.Equal(datum.DefaultDatum(cs.Type)) {
				b.WriteString(strings.Repeat(" ", 4*(level+1)) + col + ": " + datum.FormatDatum(cs.Type, d, datum.DataString) + "\n")
			}
		}
		delete(shown, ts.Name)
	}
	for _, r := range first {
		showRow(r, 0)
	}
	c.Out.WriteString(b.String())
	return nil
}
