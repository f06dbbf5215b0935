package replica

import (
	"maps"
	"slices"
)

// MonitorRequest is one <monitor-cond-request> (RFC 7047 §4.1.5 as extended by
// ovsdb-server(7)): the columns to monitor, every kind of change, no condition.
type MonitorRequest struct {
	Columns []string      `json:"columns"`
	Select  MonitorSelect `json:"select"`
}

// MonitorSelect is a request's <monitor-select>. ovsdb-server defaults every member to true;
// the request spells them out (libovsdb's test server needs them).
type MonitorSelect struct {
	Initial bool `json:"initial"`
	Insert  bool `json:"insert"`
	Delete  bool `json:"delete"`
	Modify  bool `json:"modify"`
}

// MonitorRequests returns the <monitor-cond-requests> object of a monitor_cond that asks for
// exactly the tables and columns the store keeps (Interface.statistics only with
// Options.Statistics), each table's columns sorted: what to send so that the replies and
// updates carry nothing the store would skip. Each table has one request object, not an array
// of them (RFC 7047 allows both; libovsdb's test server accepts only the object).
func (s *Store) MonitorRequests() map[string]MonitorRequest {
	out := make(map[string]MonitorRequest, len(s.tables))
	for name, ti := range s.tables {
		var cols []string
		switch ti.kind {
		case kindPort:
			for c := range ptColumns {
				cols = append(cols, portColumn(c))
			}
		case kindInterface:
			for c := range ifColumns {
				if c != ifStatistics || s.opts.Statistics {
					cols = append(cols, ifaceColumn(c))
				}
			}
		case kindBridge:
			cols = append(slices.Collect(maps.Keys(ti.cols)), "ports")
		default:
			cols = slices.Collect(maps.Keys(ti.cols))
		}
		slices.Sort(cols)
		out[name] = MonitorRequest{Columns: cols, Select: MonitorSelect{Initial: true, Insert: true, Delete: true, Modify: true}}
	}
	return out
}
