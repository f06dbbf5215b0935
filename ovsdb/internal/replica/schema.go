package replica

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

type tableKind uint8

const (
	kindSmall tableKind = iota
	kindBridge
	kindPort
	kindInterface
)

// tableInfo describes one table the store keeps.
type tableInfo struct {
	name string
	idx  int // bit in a set of tables
	kind tableKind
	// cols are the monitored columns read through libovsdb's notation (small tables, and
	// Bridge but for ports).
	cols map[string]*ovsdb.ColumnSchema
}

// monitoredColumns returns the columns the daemon monitors per table (ovsdb/client.go,
// monitoredColumns; keep the two in step). nil means every column of the table. Port and
// Interface are listed by port.go and iface.go.
func monitoredColumns() map[string][]string {
	return map[string][]string{
		vswitch.OpenvSwitchTable: {"bridges", "cur_cfg", "next_cfg", "other_config", "external_ids", "ovs_version",
			"dpdk_version", "dpdk_initialized", "iface_types", "datapath_types"},
		vswitch.BridgeTable: {"name", "datapath_type", "datapath_id", "fail_mode", "protocols", "other_config",
			"external_ids", "controller", "netflow", "ipfix", "sflow", "mirrors"}, // and ports, kept apart
		vswitch.ControllerTable: {"target", "external_ids", "is_connected"},
		vswitch.MirrorTable: {"name", "select_all", "select_src_port", "select_dst_port", "select_vlan",
			"output_port", "output_vlan", "snaplen", "external_ids"},
		vswitch.NetFlowTable:                nil,
		vswitch.IPFIXTable:                  nil,
		vswitch.SFlowTable:                  nil,
		vswitch.FlowSampleCollectorSetTable: nil,
		vswitch.QoSTable:                    nil,
		vswitch.QueueTable:                  nil,
		vswitch.PortTable:                   nil,
		vswitch.InterfaceTable:              nil,
	}
}

// newDatabaseModel returns libovsdb's model of the monitored tables.
func newDatabaseModel() (model.DatabaseModel, error) {
	cdb, err := model.NewClientDBModel("Open_vSwitch", map[string]model.Model{
		vswitch.OpenvSwitchTable: &vswitch.OpenvSwitch{}, vswitch.BridgeTable: &vswitch.Bridge{},
		vswitch.PortTable: &vswitch.Port{}, vswitch.InterfaceTable: &vswitch.Interface{},
		vswitch.ControllerTable: &vswitch.Controller{}, vswitch.NetFlowTable: &vswitch.NetFlow{},
		vswitch.IPFIXTable: &vswitch.IPFIX{}, vswitch.SFlowTable: &vswitch.SFlow{},
		vswitch.FlowSampleCollectorSetTable: &vswitch.FlowSampleCollectorSet{},
		vswitch.QoSTable:                    &vswitch.QoS{}, vswitch.QueueTable: &vswitch.Queue{}, vswitch.MirrorTable: &vswitch.Mirror{},
	})
	if err != nil {
		return model.DatabaseModel{}, fmt.Errorf("replica: client model: %w", err)
	}
	db, errs := model.NewDatabaseModel(vswitch.Schema(), cdb)
	if len(errs) > 0 {
		return model.DatabaseModel{}, fmt.Errorf("replica: database model: %v", errs)
	}
	return db, nil
}

// newTables builds the store's table descriptions from the schema.
func newTables(db model.DatabaseModel) (map[string]*tableInfo, error) {
	tables := make(map[string]*tableInfo)
	names := make([]string, 0, 12)
	for name := range monitoredColumns() {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		cols := monitoredColumns()[name]
		ts := db.Schema.Table(name)
		if ts == nil {
			return nil, fmt.Errorf("replica: table %s is not in the schema", name)
		}
		ti := &tableInfo{name: name, idx: i, cols: make(map[string]*ovsdb.ColumnSchema)}
		switch name {
		case vswitch.BridgeTable:
			ti.kind = kindBridge
		case vswitch.PortTable:
			ti.kind = kindPort
		case vswitch.InterfaceTable:
			ti.kind = kindInterface
		}
		if cols == nil && ti.kind == kindSmall {
			for c := range ts.Columns {
				cols = append(cols, c)
			}
		}
		for _, c := range cols {
			cs := ts.Column(c)
			if cs == nil {
				return nil, fmt.Errorf("replica: column %s.%s is not in the schema", name, c)
			}
			ti.cols[c] = cs
		}
		tables[name] = ti
	}
	return tables, nil
}

// normModel makes a small-table model canonical: empty maps and slices nil, sets sorted
// without duplicates (libovsdb keeps a set in the order it was read, an empty one as read).
func normModel(m model.Model) {
	v := reflect.ValueOf(m).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Map, reflect.Slice:
			if f.Len() == 0 {
				f.SetZero()
				continue
			}
		}
		switch s := f.Addr().Interface().(type) {
		case *[]string:
			slices.Sort(*s)
			*s = slices.Compact(*s)
		case *[]int:
			slices.Sort(*s)
			*s = slices.Compact(*s)
		case *[]float64:
			slices.Sort(*s)
			*s = slices.Compact(*s)
		}
	}
}
