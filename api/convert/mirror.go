package convert

import (
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// MirrorsToProto converts a bridge's mirrors (model/mirror.go); none is nil.
func MirrorsToProto(ms []model.Mirror) []*v1.Mirror {
	var out []*v1.Mirror
	for _, m := range ms {
		pm := &v1.Mirror{Name: m.Name, SelectAll: m.SelectAll, SelectSrcPort: cloneSlice(m.SelectSrcPorts),
			SelectDstPort: cloneSlice(m.SelectDstPorts), OutputPort: m.OutputPort, OutputVlan: int32Ptr(m.OutputVLAN),
			Snaplen: int32Ptr(m.Snaplen)}
		for _, v := range m.SelectVLANs {
			pm.SelectVlan = append(pm.SelectVlan, clampInt32(v))
		}
		out = append(out, pm)
	}
	return out
}

// MirrorsFromProto converts mirror messages; none is nil.
func MirrorsFromProto(ms []*v1.Mirror) []model.Mirror {
	var out []model.Mirror
	for _, pm := range ms {
		m := model.Mirror{Name: pm.GetName(), SelectAll: pm.GetSelectAll(), SelectSrcPorts: cloneSlice(pm.GetSelectSrcPort()),
			SelectDstPorts: cloneSlice(pm.GetSelectDstPort()), OutputPort: pm.GetOutputPort(), OutputVLAN: intPtr(pm.OutputVlan),
			Snaplen: intPtr(pm.Snaplen)}
		for _, v := range pm.GetSelectVlan() {
			m.SelectVLANs = append(m.SelectVLANs, int(v))
		}
		out = append(out, m)
	}
	return out
}
