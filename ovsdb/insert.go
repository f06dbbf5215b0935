package ovsdb

import (
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Direct encoders for the rows this package inserts. They write only the columns that differ
// from the schema default, exactly as libovsdb's reflective mapper would, without its per-row
// reflection and validation cost (which dominated large batches). Specs are validated before
// planning, so nothing here can fail.

func putMap(row libovsdb.Row, col string, m map[string]string) {
	if len(m) > 0 {
		row[col] = mustMap(m)
	}
}

func putOptInt(row libovsdb.Row, col string, v *int) {
	if v != nil {
		row[col] = optInt(v)
	}
}

func putOptStr[T ~string](row libovsdb.Row, col string, v *T) {
	if v != nil && *v != "" {
		row[col] = optString(string(*v))
	}
}

func insertOp(table, uuidName string, row libovsdb.Row) libovsdb.Operation {
	return libovsdb.Operation{Op: libovsdb.OperationInsert, Table: table, UUIDName: uuidName, Row: row}
}

func interfaceInsert(ifc *vswitch.Interface) libovsdb.Operation {
	row := libovsdb.Row{"name": ifc.Name}
	if ifc.Type != "" {
		row["type"] = ifc.Type
	}
	putMap(row, "options", ifc.Options)
	putMap(row, "other_config", ifc.OtherConfig)
	putMap(row, "external_ids", ifc.ExternalIDs)
	putOptInt(row, "mtu_request", ifc.MTURequest)
	putOptInt(row, "ofport_request", ifc.OfportRequest)
	for col, v := range map[string]int{"ingress_policing_rate": ifc.IngressPolicingRate, "ingress_policing_burst": ifc.IngressPolicingBurst,
		"ingress_policing_kpkts_rate": ifc.IngressPolicingKpktsRate, "ingress_policing_kpkts_burst": ifc.IngressPolicingKpktsBurst} {
		if v != 0 {
			row[col] = v
		}
	}
	return insertOp(vswitch.InterfaceTable, ifc.UUID, row)
}

func portInsert(port *vswitch.Port) libovsdb.Operation {
	row := libovsdb.Row{"name": port.Name, "interfaces": uuidSet(port.Interfaces)}
	putOptInt(row, "tag", port.Tag)
	if len(port.Trunks) > 0 {
		row["trunks"] = intSet(port.Trunks)
	}
	putOptStr(row, "vlan_mode", port.VLANMode)
	putOptStr(row, "bond_mode", port.BondMode)
	putOptStr(row, "lacp", port.LACP)
	if port.BondUpdelay != 0 {
		row["bond_updelay"] = port.BondUpdelay
	}
	if port.BondDowndelay != 0 {
		row["bond_downdelay"] = port.BondDowndelay
	}
	putMap(row, "other_config", port.OtherConfig)
	putMap(row, "external_ids", port.ExternalIDs)
	if port.QOS != nil {
		row["qos"] = optUUID(port.QOS)
	}
	return insertOp(vswitch.PortTable, port.UUID, row)
}

func bridgeInsert(br *vswitch.Bridge) libovsdb.Operation {
	row := libovsdb.Row{"name": br.Name, "ports": uuidSet(br.Ports)}
	if br.DatapathType != "" {
		row["datapath_type"] = br.DatapathType
	}
	putOptStr(row, "fail_mode", br.FailMode)
	if len(br.Controller) > 0 {
		row["controller"] = uuidSet(br.Controller)
	}
	putExportRefs(row, br)
	if len(br.Mirrors) > 0 {
		row["mirrors"] = uuidSet(br.Mirrors)
	}
	if len(br.Protocols) > 0 {
		protos := make([]string, len(br.Protocols))
		for i, p := range br.Protocols {
			protos[i] = string(p)
		}
		row["protocols"] = stringSet(protos)
	}
	putMap(row, "other_config", br.OtherConfig)
	putMap(row, "external_ids", br.ExternalIDs)
	return insertOp(vswitch.BridgeTable, br.UUID, row)
}
