package reconcile

import (
	"fmt"
	"reflect"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// QoS statuses. Each desired port with a qos gets a status of kind qos named like the port:
// ready when OVSDB holds an owned QoS row with exactly the desired type, settings and queues;
// pending until then; error when the port's QoS row, or a row of one of the wanted queue ids,
// was created by someone else (ovs-vsctl set Port … qos=@q): the daemon never overwrites,
// unlinks or deletes a row it did not create, so the message names the holder and how to
// release it. A refused or failed port puts its QoS status in error too. OVSDB does not say
// whether ovs-vswitchd could install the QoS on the netdev (a linux-htb on a DPDK interface,
// a policer on a Linux one): ovs-vswitchd logs it, and `ovs-appctl qos/show PORT` shows what
// is installed.

// qosStatus returns the status of port p's QoS on bridge; have is what OVSDB holds for the
// port (ok false: nothing), portErr the port's error (if its status is an error).
func qosStatus(bridge string, p model.Port, have ovsdb.PortQoS, ok bool, portErr string) model.Status {
	s := model.Status{Kind: model.KindQoS, Name: p.Name, Bridge: bridge, State: model.StatePending}
	want := p.QoS.Canonical()
	var held []int
	for _, q := range want.Queues {
		if containsInt(have.ForeignQueues, q.ID) {
			held = append(held, q.ID)
		}
	}
	switch {
	case ok && have.Holder == ovsdb.ExportForeign:
		s.State, s.Error = model.StateError, fmt.Sprintf(
			"port %q already has a QoS ovsplane did not create (ovs-vsctl or another controller); ovsplane leaves it alone: remove it (ovs-vsctl clear Port %s qos, then destroy the QoS row) or drop qos from the port's configuration",
			p.Name, p.Name)
	case len(held) > 0:
		s.State, s.Error = model.StateError, fmt.Sprintf(
			"port %q's QoS holds queue ids %v that ovsplane did not create; ovsplane leaves them alone: remove them (ovs-vsctl remove QoS … queues ID) or use other ids",
			p.Name, held)
	case portErr != "":
		s.State, s.Error = model.StateError, "its port is in error: "+portErr
	case ok && have.Holder == ovsdb.ExportOwned && reflect.DeepEqual(want, have.QoS):
		s.State = model.StateReady
	}
	return s
}

// portQoSes reads what OVSDB holds for every port's QoS, when the client can tell (the OVSDB
// client can; test fakes may not).
func (r *Reconciler) portQoSes() map[string]ovsdb.PortQoS {
	if pq, ok := r.c.(interface {
		PortQoSes() map[string]ovsdb.PortQoS
	}); ok {
		return pq.PortQoSes()
	}
	return nil
}
