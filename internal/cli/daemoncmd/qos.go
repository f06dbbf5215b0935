package daemoncmd

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ovsplane/ovsplane/model"
)

// A port's QoS and an interface's ingress policing in the API's JSON form (ovsplane.v1.Port's
// qos, Interface's ingress_policing_*), so `vsctl apply` carries them and `add-port
// --may-exist` keeps them instead of dropping them. Requests send numbers; protojson writes
// int64 fields as strings in responses, so the response side reads both (wireInt).

type wireQoS struct {
	Type    string      `json:"type,omitempty"`
	MaxRate *wireInt    `json:"max_rate,omitempty"`
	CIR     *wireInt    `json:"cir,omitempty"`
	CBS     *wireInt    `json:"cbs,omitempty"`
	EIR     *wireInt    `json:"eir,omitempty"`
	EBS     *wireInt    `json:"ebs,omitempty"`
	Queues  []wireQueue `json:"queues,omitempty"`
}

type wireQueue struct {
	ID       wireInt  `json:"id"`
	MinRate  *wireInt `json:"min_rate,omitempty"`
	MaxRate  *wireInt `json:"max_rate,omitempty"`
	Burst    *wireInt `json:"burst,omitempty"`
	Priority *wireInt `json:"priority,omitempty"`
	CIR      *wireInt `json:"cir,omitempty"`
	CBS      *wireInt `json:"cbs,omitempty"`
	EIR      *wireInt `json:"eir,omitempty"`
	EBS      *wireInt `json:"ebs,omitempty"`
	DSCP     *wireInt `json:"dscp,omitempty"`
}

// wireQoSResp is a QoS message as the server writes it (lowerCamelCase names).
type wireQoSResp struct {
	Type    string   `json:"type"`
	MaxRate *wireInt `json:"maxRate"`
	CIR     *wireInt `json:"cir"`
	CBS     *wireInt `json:"cbs"`
	EIR     *wireInt `json:"eir"`
	EBS     *wireInt `json:"ebs"`
	Queues  []struct {
		ID       wireInt  `json:"id"`
		MinRate  *wireInt `json:"minRate"`
		MaxRate  *wireInt `json:"maxRate"`
		Burst    *wireInt `json:"burst"`
		Priority *wireInt `json:"priority"`
		CIR      *wireInt `json:"cir"`
		CBS      *wireInt `json:"cbs"`
		EIR      *wireInt `json:"eir"`
		EBS      *wireInt `json:"ebs"`
		DSCP     *wireInt `json:"dscp"`
	} `json:"queues"`
}

// wireInt is an integer sent as a JSON number and read from a number or a decimal string
// (protojson's form of int64).
type wireInt int

// UnmarshalJSON reads a number or a quoted decimal integer.
func (w *wireInt) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("integer field %q: %w", s, err)
		}
		*w = wireInt(v)
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*w = wireInt(v)
	return nil
}

func toWireInt(p *int) *wireInt {
	if p == nil {
		return nil
	}
	v := wireInt(*p)
	return &v
}

func fromWireInt(p *wireInt) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

func qosToWire(q *model.QoS) *wireQoS {
	if q == nil {
		return nil
	}
	w := &wireQoS{Type: q.Type, MaxRate: toWireInt(q.MaxRate), CIR: toWireInt(q.CIR), CBS: toWireInt(q.CBS),
		EIR: toWireInt(q.EIR), EBS: toWireInt(q.EBS)}
	for _, qu := range q.Queues {
		w.Queues = append(w.Queues, wireQueue{ID: wireInt(qu.ID), MinRate: toWireInt(qu.MinRate), MaxRate: toWireInt(qu.MaxRate),
			Burst: toWireInt(qu.Burst), Priority: toWireInt(qu.Priority), CIR: toWireInt(qu.CIR), CBS: toWireInt(qu.CBS),
			EIR: toWireInt(qu.EIR), EBS: toWireInt(qu.EBS), DSCP: toWireInt(qu.DSCP)})
	}
	return w
}

func qosFromWire(w *wireQoSResp) *model.QoS {
	if w == nil {
		return nil
	}
	q := &model.QoS{Type: w.Type, MaxRate: fromWireInt(w.MaxRate), CIR: fromWireInt(w.CIR), CBS: fromWireInt(w.CBS),
		EIR: fromWireInt(w.EIR), EBS: fromWireInt(w.EBS)}
	for _, qu := range w.Queues {
		q.Queues = append(q.Queues, model.Queue{ID: int(qu.ID), MinRate: fromWireInt(qu.MinRate), MaxRate: fromWireInt(qu.MaxRate),
			Burst: fromWireInt(qu.Burst), Priority: fromWireInt(qu.Priority), CIR: fromWireInt(qu.CIR), CBS: fromWireInt(qu.CBS),
			EIR: fromWireInt(qu.EIR), EBS: fromWireInt(qu.EBS), DSCP: fromWireInt(qu.DSCP)})
	}
	return q
}
