package convert

import (
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// A port's QoS (model/qos.go) to and from its message. Values out of the model's range stay out
// of range (validation then refuses them by key path).

// QoSToProto converts a QoS setting; nil stays nil.
func QoSToProto(q *model.QoS) *v1.QoS {
	if q == nil {
		return nil
	}
	m := &v1.QoS{Type: q.Type, MaxRate: int64Ptr(q.MaxRate), Cir: int64Ptr(q.CIR), Cbs: int64Ptr(q.CBS),
		Eir: int64Ptr(q.EIR), Ebs: int64Ptr(q.EBS)}
	for _, qu := range q.Queues {
		m.Queues = append(m.Queues, &v1.Queue{Id: int64(qu.ID), MinRate: int64Ptr(qu.MinRate), MaxRate: int64Ptr(qu.MaxRate),
			Burst: int64Ptr(qu.Burst), Priority: int32Ptr(qu.Priority), Cir: int64Ptr(qu.CIR), Cbs: int64Ptr(qu.CBS),
			Eir: int64Ptr(qu.EIR), Ebs: int64Ptr(qu.EBS), Dscp: int32Ptr(qu.DSCP)})
	}
	return m
}

// QoSFromProto converts a QoS message; nil stays nil.
func QoSFromProto(q *v1.QoS) *model.QoS {
	if q == nil {
		return nil
	}
	c := &model.QoS{Type: q.GetType(), MaxRate: intPtr64(q.MaxRate), CIR: intPtr64(q.Cir), CBS: intPtr64(q.Cbs),
		EIR: intPtr64(q.Eir), EBS: intPtr64(q.Ebs)}
	for _, qu := range q.GetQueues() {
		c.Queues = append(c.Queues, model.Queue{ID: int(qu.GetId()), MinRate: intPtr64(qu.MinRate), MaxRate: intPtr64(qu.MaxRate),
			Burst: intPtr64(qu.Burst), Priority: intPtr(qu.Priority), CIR: intPtr64(qu.Cir), CBS: intPtr64(qu.Cbs),
			EIR: intPtr64(qu.Eir), EBS: intPtr64(qu.Ebs), DSCP: intPtr(qu.Dscp)})
	}
	return c
}
