package daemoncmd

import "github.com/ovsplane/ovsplane/model"

// A bridge's mirrors in the API's JSON form (ovsplane.v1.Bridge.mirrors, proto field names),
// so `vsctl apply` carries them.
type wireMirror struct {
	Name          string   `json:"name"`
	SelectAll     bool     `json:"select_all,omitempty"`
	SelectSrcPort []string `json:"select_src_port,omitempty"`
	SelectDstPort []string `json:"select_dst_port,omitempty"`
	SelectVLAN    []int    `json:"select_vlan,omitempty"`
	OutputPort    string   `json:"output_port,omitempty"`
	OutputVLAN    *int     `json:"output_vlan,omitempty"`
	Snaplen       *int     `json:"snaplen,omitempty"`
}

func mirrorsToWire(ms []model.Mirror) []wireMirror {
	var out []wireMirror
	for _, m := range ms {
		out = append(out, wireMirror{Name: m.Name, SelectAll: m.SelectAll, SelectSrcPort: m.SelectSrcPorts,
			SelectDstPort: m.SelectDstPorts, SelectVLAN: m.SelectVLANs, OutputPort: m.OutputPort,
			OutputVLAN: m.OutputVLAN, Snaplen: m.Snaplen})
	}
	return out
}
