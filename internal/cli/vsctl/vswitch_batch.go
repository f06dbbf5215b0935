package vsctl

import (
	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// readRows returns columns cols of the rows of table whose UUIDs are uuids, by UUID (rows
// that do not exist are missing), in one round trip whatever their number, through the view
// (so this invocation's own changes are seen): reading the ports of a bridge costs the size of
// that bridge, not of the switch.
func (v *vsView) readRows(table string, uuids []string, cols ...string) (map[string]map[string]datum.Datum, error) {
	out := make(map[string]map[string]datum.Datum, len(uuids))
	if len(uuids) == 0 {
		return out, nil
	}
	rows, err := v.db.GetMany(v.c.Ctx, table, uuids, cols...)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		m := make(map[string]datum.Datum, len(cols))
		for _, c := range cols {
			m[c], _ = r.Loaded(c)
		}
		out[r.UUID()] = m
	}
	return out, nil
}
