package stripeplugin

import (
	"strconv"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
	"github.com/ovsplane/ovsplane/stripe/engine"
)

// metricSet appends metrics sharing labels.
type metricSet struct {
	out []api.Metric
}

func (s *metricSet) add(name string, kind api.MetricKind, v float64, labels map[string]string) {
	s.out = append(s.out, api.Metric{Name: name, Kind: kind, Value: v, Labels: labels})
}

func (s *metricSet) gauge(name string, v float64, labels map[string]string) {
	s.add(name, api.MetricGauge, v, labels)
}

func (s *metricSet) counter(name string, v uint64, labels map[string]string) {
	s.add(name, api.MetricCounter, float64(v), labels)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// metrics is the job's stats sample: metricsPerJob job metrics (the endpoint's included),
// per peer metricsPerPeer metrics labelled peer and metricsPerLink per link labelled peer and
// link (the interface name), and metricsPerApp per application labelled app and peer, for as
// many applications as the sample has room for (appsShown), and metricsPerTunnel per
// transparent device labelled peer and device. Counters count since the job started.
func (j *job) metrics(now time.Time) []api.Metric {
	shown := appsShown(len(j.cfg.Links), len(j.peers), j.cfg.tunnels())
	s := metricSet{out: make([]api.Metric, 0, metricsFixed(len(j.cfg.Links), len(j.peers), j.cfg.tunnels())+shown*metricsPerApp)}
	known := 0
	for _, p := range j.peers {
		if p.known() {
			known++
		}
	}
	s.gauge("stripe_peers_known", float64(known), nil)
	s.gauge("stripe_uptime_seconds", now.Sub(j.started).Seconds(), nil)
	shares := j.apps.appMetrics(&s, shown)
	for _, p := range j.peers {
		peer := strconv.FormatUint(uint64(p.peer), 10)
		peerMetrics(&s, peer, p.known(), p.e.Stats(), shares[p.peer])
		if p.tun != nil {
			tunnelMetrics(&s, peer, p.tun)
		}
	}
	return s.out
}

// peerMetrics appends the metrics of one peer's engine and of the endpoint towards it.
func peerMetrics(s *metricSet, peer string, known bool, st engine.Stats, ep endpoint.PeerStats) {
	l := map[string]string{"peer": peer}
	s.gauge("stripe_available_bytes_per_second", ep.Capacity, l)
	s.gauge("stripe_fair_share_bytes_per_second", ep.SeedShare, l)
	s.counter("stripe_resets", st.Resets, l)
	s.counter("stripe_restarts", st.Restarts, l)
	s.counter("stripe_reset_requests", st.ResetRequests, l)
	s.counter("stripe_stale_frames", st.StaleFrames, l)
	s.counter("stripe_discarded_frames", st.Discarded, l)
	s.gauge("stripe_peer_known", boolValue(known), l)
	s.gauge("stripe_peer_nics", float64(st.Discovery.NICs), l)
	s.counter("stripe_sent_frames", st.SentFrames, l)
	s.counter("stripe_sent_bytes", st.SentBytes, l)
	s.counter("stripe_delivered_frames", st.DeliveredFrames, l)
	s.counter("stripe_delivered_bytes", st.DeliveredBytes, l)
	s.counter("stripe_retransmits", st.Retransmits, l)
	s.counter("stripe_adjusts", st.Policy.Adjusts, l)
	s.counter("stripe_skips", st.Skips, l)
	s.counter("stripe_pace_waits", st.PaceWaits, l)
	s.gauge("stripe_reorder_depth", float64(st.ReorderDepth), l)
	s.gauge("stripe_reorder_depth_max", float64(st.MaxReorderDepth), l)
	s.counter("stripe_reordered", st.Reordered, l)
	s.counter("stripe_lost", st.Lost, l)
	s.counter("stripe_duplicates", st.Duplicates+st.TooOld, l)
	s.counter("stripe_bad_frames", st.BadFrames+st.Refused+st.RxErrors, l)
	s.counter("stripe_foreign_frames", st.Foreign, l)
	s.gauge("stripe_unacked_frames", float64(st.Unacked), l)
	s.gauge("stripe_srtt_seconds", st.SRTT.Seconds(), l)
	s.counter("stripe_hellos_received", st.HellosReceived, l)
	for i, ls := range st.Links {
		ll := map[string]string{"peer": peer, "link": ls.Name}
		s.counter("stripe_link_tx_bytes", ls.TxBytes, ll)
		s.counter("stripe_link_rx_bytes", ls.RxBytes, ll)
		s.counter("stripe_link_tx_frames", ls.TxFrames, ll)
		s.counter("stripe_link_rx_frames", ls.RxFrames, ll)
		s.gauge("stripe_link_tx_load", ls.TxLoad, ll)
		s.gauge("stripe_link_rx_load", ls.RxLoad, ll)
		s.gauge("stripe_link_balance_degree", ls.BalanceDegree, ll)
		s.gauge("stripe_link_usable", boolValue(ls.Usable), ll)
		s.gauge("stripe_link_peer_macs", float64(ls.PeerMACs), ll)
		s.counter("stripe_link_drops", ls.KernelDrops+ls.RxOversize, ll)
		s.counter("stripe_link_downs", ls.Downs, ll)
		var choices uint64
		if i < len(st.Policy.PerNIC) {
			choices = st.Policy.PerNIC[i]
		}
		s.counter("stripe_link_choices", choices, ll)
	}
}
