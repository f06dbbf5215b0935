package daemoncmd

import "github.com/ovsplane/ovsplane/model"

// A bond's settings in the API's JSON form (ovsplane.v1.Port.bond): sent by proto field
// names, read back by JSON names (add-port --may-exist re-applies what it read).

type wireBond struct {
	Updelay           *int   `json:"updelay,omitempty"`
	Downdelay         *int   `json:"downdelay,omitempty"`
	DetectMode        string `json:"detect_mode,omitempty"`
	MiimonInterval    *int   `json:"miimon_interval,omitempty"`
	RebalanceInterval *int   `json:"rebalance_interval,omitempty"`
	LACPTime          string `json:"lacp_time,omitempty"`
	LACPFallbackAB    *bool  `json:"lacp_fallback_ab,omitempty"`
	Primary           string `json:"primary,omitempty"`
}

type wireBondResp struct {
	Updelay           *int   `json:"updelay"`
	Downdelay         *int   `json:"downdelay"`
	DetectMode        string `json:"detectMode"`
	MiimonInterval    *int   `json:"miimonInterval"`
	RebalanceInterval *int   `json:"rebalanceInterval"`
	LACPTime          string `json:"lacpTime"`
	LACPFallbackAB    *bool  `json:"lacpFallbackAb"`
	Primary           string `json:"primary"`
}

func bondToWire(b *model.Bond) *wireBond {
	if b == nil {
		return nil
	}
	return &wireBond{Updelay: b.Updelay, Downdelay: b.Downdelay, DetectMode: b.DetectMode, MiimonInterval: b.MiimonInterval,
		RebalanceInterval: b.RebalanceInterval, LACPTime: b.LACPTime, LACPFallbackAB: b.LACPFallbackAB, Primary: b.Primary}
}

func bondFromWire(b *wireBondResp) *model.Bond {
	if b == nil {
		return nil
	}
	return &model.Bond{Updelay: b.Updelay, Downdelay: b.Downdelay, DetectMode: b.DetectMode, MiimonInterval: b.MiimonInterval,
		RebalanceInterval: b.RebalanceInterval, LACPTime: b.LACPTime, LACPFallbackAB: b.LACPFallbackAB, Primary: b.Primary}
}
