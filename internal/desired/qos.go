package desired

import "github.com/ovsplane/ovsplane/model"

// checkQoS records the problems of port p's QoS under pp, the port's key path
// ("bridges[0].ports[1].qos.queues[0].min_rate").
func checkQoS(v *Validator, pp string, p model.Port) {
	if p.QoS == nil {
		return
	}
	putProblems(v, pp+".qos", p.QoS.Check())
}

// checkMirrors records the problems of bridge b's mirrors under bp, the bridge's key path. The
// ports they name must be b's, unless b has none listed (a bridge given alone through the API,
// whose ports are applied separately).
func checkMirrors(v *Validator, bp string, b model.Bridge) {
	if len(b.Mirrors) == 0 {
		return
	}
	var ports []string
	if b.Ports != nil {
		ports = []string{}
		for _, p := range b.Ports {
			ports = append(ports, p.Name)
		}
	}
	putProblems(v, bp+".mirrors", model.CheckMirrors(b.Mirrors, ports))
}

// checkBond records the problems of port p's bond settings under pp.
func checkBond(v *Validator, pp string, p model.Port) {
	putProblems(v, pp, p.CheckBond())
}

// checkPolicing records the problems of interface in's ingress policing under ip, the
// interface's key path.
func checkPolicing(v *Validator, ip string, in model.Interface) {
	putProblems(v, ip, in.CheckPolicing())
}

// putProblems records probs, whose paths are relative to base.
func putProblems(v *Validator, base string, probs []model.FieldProblem) {
	for _, p := range probs {
		path := base
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
