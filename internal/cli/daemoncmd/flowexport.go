package daemoncmd

import "github.com/ovsplane/ovsplane/model"

// Flow export settings in the API's JSON form (ovsplane.v1.Bridge's netflow, ipfix, sflow and
// collector_sets, proto field names), so `vsctl apply` carries a bridge's export settings
// instead of dropping them.

type wireNetFlow struct {
	Targets          []string `json:"targets,omitempty"`
	ActiveTimeout    int      `json:"active_timeout,omitempty"`
	EngineType       *int     `json:"engine_type,omitempty"`
	EngineID         *int     `json:"engine_id,omitempty"`
	AddIDToInterface bool     `json:"add_id_to_interface,omitempty"`
}

type wireIPFIX struct {
	Targets            []string          `json:"targets,omitempty"`
	Sampling           *int              `json:"sampling,omitempty"`
	ObsDomainID        *int              `json:"obs_domain_id,omitempty"`
	ObsPointID         *int              `json:"obs_point_id,omitempty"`
	CacheActiveTimeout *int              `json:"cache_active_timeout,omitempty"`
	CacheMaxFlows      *int              `json:"cache_max_flows,omitempty"`
	OtherConfig        map[string]string `json:"other_config,omitempty"`
}

type wireSFlow struct {
	Targets  []string `json:"targets,omitempty"`
	Agent    string   `json:"agent,omitempty"`
	Header   *int     `json:"header,omitempty"`
	Polling  *int     `json:"polling,omitempty"`
	Sampling *int     `json:"sampling,omitempty"`
}

type wireCollectorSet struct {
	ID    int       `json:"id"`
	IPFIX wireIPFIX `json:"ipfix"`
}

// exportToWire sets w's flow export fields from b's.
func exportToWire(w *wireBridge, b model.Bridge) {
	if n := b.NetFlow; n != nil {
		w.NetFlow = &wireNetFlow{Targets: n.Targets, ActiveTimeout: n.ActiveTimeout, EngineType: n.EngineType,
			EngineID: n.EngineID, AddIDToInterface: n.AddIDToInterface}
	}
	if x := b.IPFIX; x != nil {
		w.IPFIX = new(ipfixToWire(*x))
	}
	if s := b.SFlow; s != nil {
		w.SFlow = &wireSFlow{Targets: s.Targets, Agent: s.Agent, Header: s.Header, Polling: s.Polling, Sampling: s.Sampling}
	}
	for _, cs := range b.CollectorSets {
		w.CollectorSets = append(w.CollectorSets, wireCollectorSet{ID: cs.ID, IPFIX: ipfixToWire(cs.IPFIX)})
	}
	w.Mirrors = mirrorsToWire(b.Mirrors)
}

func ipfixToWire(x model.IPFIX) wireIPFIX {
	return wireIPFIX{Targets: x.Targets, Sampling: x.Sampling, ObsDomainID: x.ObsDomainID, ObsPointID: x.ObsPointID,
		CacheActiveTimeout: x.CacheActiveTimeout, CacheMaxFlows: x.CacheMaxFlows, OtherConfig: x.OtherConfig}
}
