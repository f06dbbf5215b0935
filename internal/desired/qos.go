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
