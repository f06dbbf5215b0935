package desired

import "github.com/ovsplane/ovsplane/model"

// checkExport records the problems of bridge b's flow export settings (netflow, ipfix, sflow,
// collector_sets) under bp, the bridge's key path.
func checkExport(v *Validator, bp string, b model.Bridge) {
	put := func(key string, probs []model.FieldProblem) { putProblems(v, bp+"."+key, probs) }
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
}
