package ovsdb_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// qosOf returns the QoS row port refers to (nil when none) and its queues by id, as the foreign
// client sees them once cond accepts them.
func qosOf(t *testing.T, e *env, port string, cond func(*vswitch.QoS, map[int]*vswitch.Queue) string) (*vswitch.QoS, map[int]*vswitch.Queue) {
	t.Helper()
	var q *vswitch.QoS
	var queues map[int]*vswitch.Queue
	eventually(t, func() string {
		p, err := getPort(ctxT(t), e, port)
		if err != nil {
			return err.Error()
		}
		q, queues = nil, map[int]*vswitch.Queue{}
		if p.QOS != nil {
			q = &vswitch.QoS{UUID: *p.QOS}
			if err := e.foreign.Get(ctxT(t), q); err != nil {
				return fmt.Sprintf("qos %s: %v", *p.QOS, err)
			}
			for id, u := range q.Queues {
				qu := &vswitch.Queue{UUID: u}
				if err := e.foreign.Get(ctxT(t), qu); err != nil {
					return fmt.Sprintf("queue %d: %v", id, err)
				}
				queues[id] = qu
			}
		}
		return cond(q, queues)
	})
	return q, queues
}

// TestPortQoS: a port's QoS and queues are created with the port (one transaction), tagged,
// updated in place (a queue added, one changed, one dropped), deleted with the port's QoS
// (root tables: nothing leaks); a QoS someone else linked is never touched and is reported;
// ingress policing columns follow the interface; bad settings are refused naming the key.
func TestPortQoS(t *testing.T) {
	e := newEnv(t)
	commit(t, e.c.NewTxn(1).EnsureBridge(model.Bridge{Name: "br0"}, nil))
	htb := &model.QoS{Type: model.QoSLinuxHTB, MaxRate: intp(100_000_000), Queues: []model.Queue{
		{ID: 0, MinRate: intp(1_000_000), MaxRate: intp(50_000_000), Priority: intp(1)},
		{ID: 7, MaxRate: intp(10_000_000), Burst: intp(80_000), DSCP: intp(10)}}}
	port := model.Port{Name: "p0", QoS: htb, Interfaces: []model.Interface{{Name: "p0",
		IngressPolicingRate: intp(20_000), IngressPolicingBurst: intp(2_000)}}}
	ensure := func(p model.Port) {
		t.Helper()
		commit(t, e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: p}))
	}
	ensure(port)
	q, queues := qosOf(t, e, "p0", func(q *vswitch.QoS, qs map[int]*vswitch.Queue) string {
		if q == nil || len(qs) != 2 {
			return fmt.Sprintf("qos %v queues %d, want a QoS with 2 queues", q, len(qs))
		}
		return ""
	})
	if q.Type != "linux-htb" || q.OtherConfig["max-rate"] != "100000000" || q.ExternalIDs[ovsdb.OwnerKey] != ovsdb.DefaultOwner {
		t.Errorf("qos row %+v, want linux-htb max-rate 100000000, owned", q)
	}
	if oc := queues[0].OtherConfig; oc["min-rate"] != "1000000" || oc["max-rate"] != "50000000" || oc["priority"] != "1" {
		t.Errorf("queue 0 other_config %v", oc)
	}
	if qu := queues[7]; qu.DSCP == nil || *qu.DSCP != 10 || qu.OtherConfig["burst"] != "80000" || qu.ExternalIDs[ovsdb.OwnerKey] != ovsdb.DefaultOwner {
		t.Errorf("queue 7 %+v, want dscp 10 burst 80000, owned", qu)
	}
	ifc, err := getIface(ctxT(t), e, "p0")
	if err != nil || ifc.IngressPolicingRate != 20_000 || ifc.IngressPolicingBurst != 2_000 {
		t.Errorf("interface p0 %+v (%v), want ingress policing 20000/2000", ifc, err)
	}
	if pq := e.c.PortQoSes()["p0"]; pq.Holder != ovsdb.ExportOwned || len(pq.QoS.Queues) != 2 {
		t.Errorf("PortQoSes()[p0] = %+v, want owned with 2 queues", pq)
	}

	// In place: queue 7 dropped, queue 0 changed, queue 3 added, the QoS's rate changed.
	port.QoS = &model.QoS{Type: model.QoSLinuxHTB, MaxRate: intp(200_000_000), Queues: []model.Queue{
		{ID: 0, MinRate: intp(2_000_000)}, {ID: 3, MaxRate: intp(5_000_000)}}}
	port.Interfaces[0].IngressPolicingBurst = nil
	ensure(port)
	q2, _ := qosOf(t, e, "p0", func(q *vswitch.QoS, qs map[int]*vswitch.Queue) string {
		if q == nil || q.OtherConfig["max-rate"] != "200000000" || len(qs) != 2 || qs[3] == nil || qs[0].OtherConfig["min-rate"] != "2000000" {
			return fmt.Sprintf("qos %v, want max-rate 200000000 with queues 0 (min-rate 2000000) and 3", q)
		}
		return ""
	})
	if q2.UUID != q.UUID {
		t.Errorf("qos row replaced (%s → %s), want it updated in place", q.UUID, q2.UUID)
	}
	eventually(t, func() string {
		if n := rowsIn[vswitch.Queue](t, e); n != 2 {
			return fmt.Sprintf("%d queue rows, want 2 (the dropped one deleted)", n)
		}
		if ifc, _ := getIface(ctxT(t), e, "p0"); ifc.IngressPolicingBurst != 0 || ifc.IngressPolicingRate != 20_000 {
			return fmt.Sprintf("ingress policing %d/%d, want 20000/0", ifc.IngressPolicingRate, ifc.IngressPolicingBurst)
		}
		return ""
	})
	// A QoS without queues gets its first queue in place.
	commit(t, e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p3",
		QoS: &model.QoS{Type: model.QoSEgressPolicer, CIR: intp(1000), CBS: intp(100)}}}))
	commit(t, e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p3",
		QoS: &model.QoS{Type: model.QoSTrTCMPolicer, CIR: intp(1000), CBS: intp(100), Queues: []model.Queue{{ID: 2, CIR: intp(10), CBS: intp(10)}}}}}))
	qosOf(t, e, "p3", func(q *vswitch.QoS, qs map[int]*vswitch.Queue) string {
		if q == nil || q.Type != "trtcm-policer" || qs[2] == nil || qs[2].OtherConfig["cir"] != "10" {
			return fmt.Sprintf("p3 qos %+v queues %v, want trtcm-policer with queue 2", q, qs)
		}
		return ""
	})
	commit(t, e.c.NewTxn(1).DeletePort("br0", "p3"))

	// Same intent again: nothing to do.
	if res := commit(t, e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: port})); res.Ops != 0 {
		t.Errorf("unchanged QoS planned %d operations, want 0", res.Ops)
	}

	// Dropped: unlinked and deleted, queues too (QoS and Queue are root tables).
	port.QoS = nil
	ensure(port)
	eventually(t, func() string {
		if n, m := rowsIn[vswitch.QoS](t, e), rowsIn[vswitch.Queue](t, e); n+m != 0 {
			return fmt.Sprintf("%d QoS and %d queue rows left, want none", n, m)
		}
		return ""
	})

	// Someone else's QoS on the owned port: never replaced, unlinked or deleted; reported.
	foreignTransact(t, e, func() ([]ovsdbOp, error) {
		ops, err := e.foreign.Create(&vswitch.QoS{UUID: "fq", Type: "linux-htb", OtherConfig: map[string]string{"max-rate": "1000"}})
		if err != nil {
			return nil, err
		}
		p, err := getPort(ctxT(t), e, "p0")
		if err != nil {
			return nil, err
		}
		fq := "fq"
		p.QOS = &fq
		upd, err := e.foreign.Where(p).Update(p, &p.QOS)
		return append(ops, upd...), err
	})
	eventually(t, func() string {
		if h := e.c.PortQoSes()["p0"].Holder; h != ovsdb.ExportForeign {
			return fmt.Sprintf("holder %q, want foreign", h)
		}
		return ""
	})
	port.QoS = htb
	ensure(port)
	port.QoS = nil
	ensure(port)
	after, _ := qosOf(t, e, "p0", func(*vswitch.QoS, map[int]*vswitch.Queue) string { return "" })
	if after == nil || after.OtherConfig["max-rate"] != "1000" || after.ExternalIDs[ovsdb.OwnerKey] != "" {
		t.Errorf("foreign qos became %+v, want it untouched", after)
	}

	// A port deleted with its owned QoS takes the rows with it.
	commit(t, e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1", QoS: htb}}))
	qosOf(t, e, "p1", func(q *vswitch.QoS, _ map[int]*vswitch.Queue) string {
		if q == nil {
			return "p1 has no QoS yet"
		}
		return ""
	})
	commit(t, e.c.NewTxn(1).DeletePort("br0", "p1"))
	eventually(t, func() string {
		if n, m := rowsIn[vswitch.QoS](t, e), rowsIn[vswitch.Queue](t, e); n != 1 || m != 0 {
			return fmt.Sprintf("%d QoS and %d queue rows after deleting p1, want only the foreign QoS", n, m)
		}
		return ""
	})

	// Bad settings are refused before anything is sent, naming the port and the key.
	for _, bad := range []struct {
		p   model.Port
		key string
	}{
		{model.Port{Name: "p2", QoS: &model.QoS{Type: "linux-hbt"}}, "qos.type"},
		{model.Port{Name: "p2", QoS: &model.QoS{Type: model.QoSEgressPolicer, CIR: intp(1000)}}, "qos.cbs"},
		{model.Port{Name: "p2", QoS: &model.QoS{Type: model.QoSEgressPolicer, CIR: intp(1), CBS: intp(1), Queues: []model.Queue{{ID: 1}}}}, "qos.queues"},
		{model.Port{Name: "p2", QoS: &model.QoS{Type: model.QoSLinuxHTB, Queues: []model.Queue{{ID: 1, MinRate: intp(9), MaxRate: intp(8)}}}}, "qos.queues[0].min_rate"},
		{model.Port{Name: "p2", Interfaces: []model.Interface{{Name: "p2", IngressPolicingBurst: intp(5)}}}, "ingress_policing_burst"},
	} {
		_, err := e.c.NewTxn(1).EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: bad.p}).Commit(ctxT(t), ovsdb.CommitOptions{NoWait: true})
		if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), `port "p2"`) || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("EnsurePort(%+v): %v, want ErrInvalid naming the port and %s", bad.p, err, bad.key)
		}
	}
}
