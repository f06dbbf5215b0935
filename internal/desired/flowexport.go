package desired

import "github.com/ovsplane/ovsplane/model"

// checkExport records the problems of bridge b's flow export settings (netflow, ipfix, sflow,
// collector_sets) under bp, the bridge's key path.
func checkExport(v *Validator, bp string, b model.Bridge) {
	put := func(key string, probs []model.FieldProblem) {
		for _, p := range probs {
			path := bp + "." + key
			switch {
			case p.Path == "":
			case p.Path[0] == '[':
				path += p.Path
			default:
				path += "." + p.Path
			}
			v.Add(path, "%s", p.Message)
		}
	}
	if b.NetFlow != nil {
		put("netflow", b.NetFlow.Check())
	}
	if b.IPFIX != nil {
		put("ipfix", b.IPFIX.Check())
	}
	if b.SFlow != nil {
		put("sflow", b.SFlow.Check())
	}
	put("collector_sets", model.CheckCollectorSets(b.CollectorSets))
	if len(b.Mirrors) > 0 {
		ports := []string{}
		for _, p := range b.Ports {
			ports = append(ports, p.Name)
		}
		if b.Ports == nil {
			ports = nil // a bridge given alone (the API): its ports are applied separately
		}
		put("mirrors", model.CheckMirrors(b.Mirrors, ports))
	}
}
