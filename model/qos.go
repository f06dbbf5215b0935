package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Egress QoS and ingress policing. A port's QoS is one row of OVS's QoS table referenced from
// Port.qos, and its queues rows of the Queue table referenced from QoS.queues by queue id. The
// settings OVS keeps in their other_config maps are typed fields here, each bounded; the keys
// they become are named on each field. Ingress policing is four columns of the Interface
// (Interface.IngressPolicing*).
//
// Which datapath does what (OVS 3.1): linux-htb shapes through the kernel's tc on a Linux
// netdev (system or internal interfaces, on either datapath); egress-policer and
// trtcm-policer police in userspace on DPDK interfaces (netdev-dpdk) only. Ingress policing
// by rate uses tc on a Linux netdev and a DPDK meter on a DPDK interface; by packets
// (kpkts) is implemented for DPDK interfaces (and the kernel datapath's meters).

// KindQoS is the kind of a port's QoS status, named like the port, with Bridge set.
const KindQoS Kind = "qos"

// QoS types the configuration accepts.
const (
	QoSLinuxHTB      = "linux-htb"
	QoSEgressPolicer = "egress-policer"
	QoSTrTCMPolicer  = "trtcm-policer"
)

// QoSTypes lists the accepted QoS types, in the order error messages show them. Callers must
// not modify it.
var QoSTypes = []string{QoSLinuxHTB, QoSEgressPolicer, QoSTrTCMPolicer}

// Bounds of QoS and policing settings.
const (
	// MaxQueues is the most queues one QoS may have (ovsplane's bound).
	MaxQueues = 64
	// MaxQueueID is the largest queue id (QoS.queues keys are 0..2^32-1 in vswitch.xml).
	MaxQueueID = 1<<32 - 1
	// MaxRateBits bounds a rate in bits per second (ovsplane's bound: 1 Tbit/s).
	MaxRateBits = 1_000_000_000_000
	// MaxRateBytes bounds a policer's rate in bytes per second (MaxRateBits / 8).
	MaxRateBytes = MaxRateBits / 8
	// MaxBurst bounds a burst, in bits (linux-htb) or bytes (policers): 2^32-1, what tc and
	// the DPDK meter profile hold.
	MaxBurst = 1<<32 - 1
	// MaxHTBPriority bounds a linux-htb queue's priority (ovsplane's bound: the kernel's htb
	// has priorities 0..7 and silently treats a larger one as 7).
	MaxHTBPriority = 7
	// MaxDSCP bounds Queue.dscp (vswitch.xml: 0..63).
	MaxDSCP = 63
	// MaxPolicing bounds the ingress policing columns: OVS hands them to the netdev as
	// 32-bit numbers and clamps larger values.
	MaxPolicing = 1<<32 - 1
)

// QoS is a port's egress QoS (OVS's QoS table).
type QoS struct {
	// Type is one of QoSTypes.
	Type string `mapstructure:"type" yaml:"type"`
	// MaxRate (linux-htb only) is other_config:max-rate, the port's total rate in bits/s
	// (1..MaxRateBits); nil lets OVS use the link speed.
	MaxRate *int `mapstructure:"max_rate" yaml:"max_rate,omitempty"`
	// CIR and CBS (policers only, both required) are other_config:cir and cbs, the committed
	// rate in bytes/s (1..MaxRateBytes) and burst in bytes (1..MaxBurst).
	CIR *int `mapstructure:"cir" yaml:"cir,omitempty"`
	CBS *int `mapstructure:"cbs" yaml:"cbs,omitempty"`
	// EIR and EBS (trtcm-policer only) are other_config:eir and ebs, the excess rate in
	// bytes/s and burst in bytes (0..MaxRateBytes, 0..MaxBurst); nil is 0.
	EIR *int `mapstructure:"eir" yaml:"eir,omitempty"`
	EBS *int `mapstructure:"ebs" yaml:"ebs,omitempty"`
	// Queues (linux-htb and trtcm-policer) are selected by OpenFlow's set_queue action; ids are
	// unique. At most MaxQueues.
	Queues []Queue `mapstructure:"queues" yaml:"queues,omitempty" json:",omitempty"`
}

// Queue is one queue of a QoS (OVS's Queue table).
type Queue struct {
	// ID is the queue id (0..MaxQueueID), the key in QoS.queues.
	ID int `mapstructure:"id" yaml:"id"`
	// MinRate, MaxRate (bits/s, 1..MaxRateBits), Burst (bits, 1..MaxBurst) and Priority
	// (0..MaxHTBPriority) are linux-htb's other_config:min-rate, max-rate, burst, priority.
	MinRate  *int `mapstructure:"min_rate" yaml:"min_rate,omitempty"`
	MaxRate  *int `mapstructure:"max_rate" yaml:"max_rate,omitempty"`
	Burst    *int `mapstructure:"burst" yaml:"burst,omitempty"`
	Priority *int `mapstructure:"priority" yaml:"priority,omitempty"`
	// CIR, CBS, EIR, EBS are trtcm-policer's per-queue other_config keys (bytes/s, bytes); CIR
	// and CBS are required there.
	CIR *int `mapstructure:"cir" yaml:"cir,omitempty"`
	CBS *int `mapstructure:"cbs" yaml:"cbs,omitempty"`
	EIR *int `mapstructure:"eir" yaml:"eir,omitempty"`
	EBS *int `mapstructure:"ebs" yaml:"ebs,omitempty"`
	// DSCP (0..63) is Queue.dscp, the DSCP value packets in the queue get; nil leaves it.
	DSCP *int `mapstructure:"dscp" yaml:"dscp,omitempty"`
}

// Check returns every problem of q (none when it is acceptable), with paths relative to the
// QoS ("queues[1].min_rate").
func (q *QoS) Check() []FieldProblem {
	var out []FieldProblem
	add := func(path, format string, args ...any) {
		out = append(out, FieldProblem{path, fmt.Sprintf(format, args...)})
	}
	not := func(path string, set bool, why string) {
		if set {
			add(path, "%s does not take this setting (%s); remove it", q.Type, why)
		}
	}
	switch q.Type {
	case QoSLinuxHTB:
		checkRange(add, "max_rate", q.MaxRate, 1, MaxRateBits)
		for _, k := range []struct {
			key string
			v   *int
		}{{"cir", q.CIR}, {"cbs", q.CBS}, {"eir", q.EIR}, {"ebs", q.EBS}} {
			not(k.key, k.v != nil, "linux-htb takes max_rate, and rates per queue")
		}
	case QoSEgressPolicer, QoSTrTCMPolicer:
		not("max_rate", q.MaxRate != nil, "a policer takes cir and cbs in bytes")
		requireRange(add, "cir", q.CIR, 1, MaxRateBytes, "the committed rate in bytes/s")
		requireRange(add, "cbs", q.CBS, 1, MaxBurst, "the committed burst in bytes")
		if q.Type == QoSEgressPolicer {
			not("eir", q.EIR != nil, "only trtcm-policer has an excess rate")
			not("ebs", q.EBS != nil, "only trtcm-policer has an excess burst")
			not("queues", len(q.Queues) > 0, "egress-policer has one policer for the port; use trtcm-policer for queues")
		}
		checkRange(add, "eir", q.EIR, 0, MaxRateBytes)
		checkRange(add, "ebs", q.EBS, 0, MaxBurst)
	case "":
		add("type", "required: %s", quoteList(QoSTypes))
		return out
	default:
		add("type", "unknown QoS type %q (%s)", q.Type, quoteList(QoSTypes))
		return out
	}
	if len(q.Queues) > MaxQueues {
		add("queues", "%d queues, at most %d", len(q.Queues), MaxQueues)
		return out
	}
	seen := map[int]int{}
	for i, qu := range q.Queues {
		p := fmt.Sprintf("queues[%d]", i)
		if qu.ID < 0 || qu.ID > MaxQueueID {
			add(p+".id", "%d is out of range 0..%d", qu.ID, MaxQueueID)
		} else if j, dup := seen[qu.ID]; dup {
			add(p+".id", "duplicate queue id %d (also queues[%d]); give each queue its own id", qu.ID, j)
		} else {
			seen[qu.ID] = i
		}
		checkRange(add, p+".dscp", qu.DSCP, 0, MaxDSCP)
		if q.Type == QoSLinuxHTB {
			checkRange(add, p+".min_rate", qu.MinRate, 1, MaxRateBits)
			checkRange(add, p+".max_rate", qu.MaxRate, 1, MaxRateBits)
			checkRange(add, p+".burst", qu.Burst, 1, MaxBurst)
			checkRange(add, p+".priority", qu.Priority, 0, MaxHTBPriority)
			if qu.MinRate != nil && qu.MaxRate != nil && *qu.MinRate > *qu.MaxRate {
				add(p+".min_rate", "%d is above max_rate %d; lower min_rate or raise max_rate", *qu.MinRate, *qu.MaxRate)
			}
			if qu.MaxRate != nil && q.MaxRate != nil && *qu.MaxRate > *q.MaxRate {
				add(p+".max_rate", "%d is above the QoS's max_rate %d (the port's total); lower it", *qu.MaxRate, *q.MaxRate)
			}
			for _, k := range []struct {
				key string
				v   *int
			}{{"cir", qu.CIR}, {"cbs", qu.CBS}, {"eir", qu.EIR}, {"ebs", qu.EBS}} {
				if k.v != nil {
					add(p+"."+k.key, "not a linux-htb queue setting (linux-htb queues take min_rate, max_rate, burst, priority in bits); remove it")
				}
			}
			continue
		}
		requireRange(add, p+".cir", qu.CIR, 1, MaxRateBytes, "the queue's committed rate in bytes/s")
		requireRange(add, p+".cbs", qu.CBS, 1, MaxBurst, "the queue's committed burst in bytes")
		checkRange(add, p+".eir", qu.EIR, 0, MaxRateBytes)
		checkRange(add, p+".ebs", qu.EBS, 0, MaxBurst)
		for _, k := range []struct {
			key string
			v   *int
		}{{"min_rate", qu.MinRate}, {"max_rate", qu.MaxRate}, {"burst", qu.Burst}, {"priority", qu.Priority}} {
			if k.v != nil {
				add(p+"."+k.key, "not a trtcm-policer queue setting (its queues take cir, cbs, eir, ebs in bytes); remove it")
			}
		}
	}
	return out
}

// requireRange is checkRange for a setting that must be present.
func requireRange(add func(string, string, ...any), path string, v *int, lo, hi int, what string) {
	if v == nil {
		add(path, "required: %s (%d..%d)", what, lo, hi)
		return
	}
	checkRange(add, path, v, lo, hi)
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "one of: " + strings.Join(q, ", ")
}

// OtherConfig returns the QoS row's other_config for q's settings.
func (q *QoS) OtherConfig() map[string]string {
	m := map[string]string{}
	putInt(m, "max-rate", q.MaxRate)
	putInt(m, "cir", q.CIR)
	putInt(m, "cbs", q.CBS)
	putInt(m, "eir", q.EIR)
	putInt(m, "ebs", q.EBS)
	return m
}

// OtherConfig returns the Queue row's other_config for qu's settings.
func (qu *Queue) OtherConfig() map[string]string {
	m := map[string]string{}
	putInt(m, "min-rate", qu.MinRate)
	putInt(m, "max-rate", qu.MaxRate)
	putInt(m, "burst", qu.Burst)
	putInt(m, "priority", qu.Priority)
	putInt(m, "cir", qu.CIR)
	putInt(m, "cbs", qu.CBS)
	putInt(m, "eir", qu.EIR)
	putInt(m, "ebs", qu.EBS)
	return m
}

// QoSFromRow is the inverse of QoS.OtherConfig: the settings of a QoS row of type typ with
// other_config oc (keys it does not know, or values that are not decimal numbers, are left
// out: such a row then differs from any desired QoS and is rewritten).
func QoSFromRow(typ string, oc map[string]string) *QoS {
	return &QoS{Type: typ, MaxRate: getInt(oc, "max-rate"), CIR: getInt(oc, "cir"), CBS: getInt(oc, "cbs"),
		EIR: getInt(oc, "eir"), EBS: getInt(oc, "ebs")}
}

// QueueFromRow is the inverse of Queue.OtherConfig for queue id, with its dscp column.
func QueueFromRow(id int, oc map[string]string, dscp *int) Queue {
	return Queue{ID: id, MinRate: getInt(oc, "min-rate"), MaxRate: getInt(oc, "max-rate"), Burst: getInt(oc, "burst"),
		Priority: getInt(oc, "priority"), CIR: getInt(oc, "cir"), CBS: getInt(oc, "cbs"), EIR: getInt(oc, "eir"),
		EBS: getInt(oc, "ebs"), DSCP: cloneInt(dscp)}
}

func putInt(m map[string]string, k string, v *int) {
	if v != nil {
		m[k] = strconv.Itoa(*v)
	}
}

func getInt(m map[string]string, k string) *int {
	s, ok := m[k]
	if !ok {
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(v) != s {
		return nil
	}
	return &v
}

// Canonical returns a deep copy of q with its queues sorted by id (nil when none).
func (q *QoS) Canonical() *QoS {
	if q == nil {
		return nil
	}
	c := *q
	c.MaxRate, c.CIR, c.CBS, c.EIR, c.EBS = cloneInt(q.MaxRate), cloneInt(q.CIR), cloneInt(q.CBS), cloneInt(q.EIR), cloneInt(q.EBS)
	c.Queues = nil
	for _, qu := range q.Queues {
		c.Queues = append(c.Queues, qu.canonical())
	}
	slices.SortFunc(c.Queues, func(a, b Queue) int { return a.ID - b.ID })
	return &c
}

func (qu Queue) canonical() Queue {
	c := qu
	c.MinRate, c.MaxRate, c.Burst, c.Priority = cloneInt(qu.MinRate), cloneInt(qu.MaxRate), cloneInt(qu.Burst), cloneInt(qu.Priority)
	c.CIR, c.CBS, c.EIR, c.EBS, c.DSCP = cloneInt(qu.CIR), cloneInt(qu.CBS), cloneInt(qu.EIR), cloneInt(qu.EBS), cloneInt(qu.DSCP)
	return c
}

// CheckPolicing returns the problems of an interface's ingress policing, with paths relative
// to the interface: each value 0..MaxPolicing, and a burst only with its rate.
func (in *Interface) CheckPolicing() []FieldProblem {
	var out []FieldProblem
	add := func(path, format string, args ...any) {
		out = append(out, FieldProblem{path, fmt.Sprintf(format, args...)})
	}
	checkRange(add, "ingress_policing_rate", in.IngressPolicingRate, 0, MaxPolicing)
	checkRange(add, "ingress_policing_burst", in.IngressPolicingBurst, 0, MaxPolicing)
	checkRange(add, "ingress_policing_kpkts_rate", in.IngressPolicingKpktsRate, 0, MaxPolicing)
	checkRange(add, "ingress_policing_kpkts_burst", in.IngressPolicingKpktsBurst, 0, MaxPolicing)
	if positive(in.IngressPolicingBurst) && !positive(in.IngressPolicingRate) {
		add("ingress_policing_burst", "set without ingress_policing_rate (OVS ignores a burst without a rate); set the rate in kbit/s or remove the burst")
	}
	if positive(in.IngressPolicingKpktsBurst) && !positive(in.IngressPolicingKpktsRate) {
		add("ingress_policing_kpkts_burst", "set without ingress_policing_kpkts_rate (OVS ignores a burst without a rate); set the rate in kpkt/s or remove the burst")
	}
	return out
}

func positive(p *int) bool { return p != nil && *p > 0 }

// zeroNil returns nil for nil or 0 (the ingress policing columns' "off"), else a copy.
func zeroNil(p *int) *int {
	if p == nil || *p == 0 {
		return nil
	}
	return cloneInt(p)
}
