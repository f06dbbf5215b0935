package gen

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// FlowReport puts one flow's sent and received counts side by side.
type FlowReport struct {
	// Flow is the flow's index; Key its 5-tuple as generated.
	Flow int     `json:"flow"`
	Key  FlowKey `json:"-"`
	// Src and Dst are Key's addresses as text ("10.0.0.1:1000"), for JSON.
	Src string `json:"src"`
	Dst string `json:"dst"`
	// SentPackets and SentL3Bytes are what the generator sent (L3: IPv4 total lengths).
	SentPackets uint64 `json:"sent_packets"`
	SentL3Bytes uint64 `json:"sent_l3_bytes"`
	// RecvPackets, RecvL3Bytes and RecvFrameBytes are what the receiver counted (duplicates
	// included).
	RecvPackets    uint64 `json:"recv_packets"`
	RecvL3Bytes    uint64 `json:"recv_l3_bytes"`
	RecvFrameBytes uint64 `json:"recv_frame_bytes"`
	// Lost is SentPackets minus the distinct frames received (negative only if the receiver
	// saw frames of an earlier run); LossRatio is Lost/SentPackets.
	Lost      int64   `json:"lost"`
	LossRatio float64 `json:"loss_ratio"`
	// Duplicates and Reordered are the receiver's counts.
	Duplicates uint64 `json:"duplicates"`
	Reordered  uint64 `json:"reordered"`
	// RecvPPS and RecvL3BitsPerSecond are the flow's received rate between its first and last
	// frame (0 for fewer than two frames).
	RecvPPS             float64 `json:"recv_pps"`
	RecvL3BitsPerSecond float64 `json:"recv_l3_bps"`
	// LatencyAvg and LatencyMax are the send-to-receive times of its frames.
	LatencyAvg time.Duration `json:"latency_avg_ns"`
	LatencyMax time.Duration `json:"latency_max_ns"`
}

// Report is a run's outcome: what the generator sent and the receiver counted, per flow and in
// total, with throughput.
type Report struct {
	// Interface and RecvInterface are where frames were sent and counted.
	Interface     string `json:"interface"`
	RecvInterface string `json:"recv_interface"`
	// Method is the send path ("tx-ring" or "send").
	Method string `json:"method"`
	// FrameSize is the frames' size (no FCS); L3 bytes are FrameSize-14 per frame.
	FrameSize int `json:"frame_size"`
	// Start and Duration bound the send.
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`
	// Flows holds one report per flow, by index.
	Flows []FlowReport `json:"flows"`
	// Totals over all flows.
	SentPackets uint64 `json:"sent_packets"`
	SentL3Bytes uint64 `json:"sent_l3_bytes"`
	RecvPackets uint64 `json:"recv_packets"`
	RecvL3Bytes uint64 `json:"recv_l3_bytes"`
	Lost        int64  `json:"lost"`
	// LossRatio is Lost/SentPackets.
	LossRatio float64 `json:"loss_ratio"`
	// SentPPS, SentFrameBitsPerSecond and SentL3BitsPerSecond are the achieved send rate over
	// Duration (frame bits: whole frames without FCS, preamble or gap).
	SentPPS                float64 `json:"sent_pps"`
	SentFrameBitsPerSecond float64 `json:"sent_frame_bps"`
	SentL3BitsPerSecond    float64 `json:"sent_l3_bps"`
	// RecvPPS and RecvL3BitsPerSecond are the received rate between the first and the last
	// frame over all flows.
	RecvPPS             float64 `json:"recv_pps"`
	RecvL3BitsPerSecond float64 `json:"recv_l3_bps"`
	// Retries counts sends the kernel refused for lack of buffers and the generator retried.
	Retries uint64 `json:"retries"`
	// Foreign, Corrupt, OutOfRange, KernelDrops are the receiver's counts of other frames and
	// of frames its socket dropped.
	Foreign     uint64 `json:"foreign"`
	Corrupt     uint64 `json:"corrupt"`
	OutOfRange  uint64 `json:"out_of_range"`
	KernelDrops uint64 `json:"kernel_drops"`
}

// NewReport compares what was sent with what was received. recv's flows beyond sent's are
// ignored; missing ones count as nothing received.
func NewReport(sent Sent, recv Received) Report {
	l3 := uint64(max(sent.Spec.FrameSize-EthHeaderLen, 0))
	r := Report{
		Interface: sent.Spec.Interface, RecvInterface: recv.Interface, Method: sent.Method.String(),
		FrameSize: sent.Spec.FrameSize, Start: sent.Start, Duration: sent.End.Sub(sent.Start),
		Retries: sent.Retries, Foreign: recv.Foreign, Corrupt: recv.Corrupt, OutOfRange: recv.OutOfRange,
		KernelDrops: recv.KernelDrops,
	}
	var first, last time.Time
	for i := range sent.Spec.Flows {
		var rx FlowRx
		if i < len(recv.Flows) {
			rx = recv.Flows[i]
		}
		k := sent.Spec.FlowKey(i)
		fr := FlowReport{
			Flow: i, Key: k, Src: k.Src.String(), Dst: k.Dst.String(),
			SentPackets: sent.FlowPackets(i), RecvPackets: rx.Packets,
			RecvL3Bytes: rx.L3Bytes, RecvFrameBytes: rx.FrameBytes,
			Duplicates: rx.Duplicates, Reordered: rx.Reordered, LatencyMax: rx.LatencyMax,
		}
		fr.SentL3Bytes = fr.SentPackets * l3
		fr.Lost = int64(fr.SentPackets) - int64(rx.Packets-rx.Duplicates)
		fr.LossRatio = ratio(float64(fr.Lost), float64(fr.SentPackets))
		if rx.Packets > 0 {
			fr.LatencyAvg = rx.LatencySum / time.Duration(rx.Packets)
			if first.IsZero() || rx.First.Before(first) {
				first = rx.First
			}
			last = later(last, rx.Last)
		}
		if d := rx.Last.Sub(rx.First).Seconds(); rx.Packets > 1 && d > 0 {
			fr.RecvPPS = float64(rx.Packets-1) / d
			fr.RecvL3BitsPerSecond = fr.RecvPPS * float64(rx.L3Bytes) / float64(rx.Packets) * 8
		}
		r.Flows = append(r.Flows, fr)
		r.SentPackets += fr.SentPackets
		r.SentL3Bytes += fr.SentL3Bytes
		r.RecvPackets += fr.RecvPackets
		r.RecvL3Bytes += fr.RecvL3Bytes
		r.Lost += fr.Lost
	}
	r.LossRatio = ratio(float64(r.Lost), float64(r.SentPackets))
	if d := r.Duration.Seconds(); d > 0 {
		r.SentPPS = float64(r.SentPackets) / d
		r.SentFrameBitsPerSecond = r.SentPPS * float64(sent.Spec.FrameSize) * 8
		r.SentL3BitsPerSecond = r.SentPPS * float64(l3) * 8
	}
	if d := last.Sub(first).Seconds(); r.RecvPackets > 1 && d > 0 {
		r.RecvPPS = float64(r.RecvPackets-1) / d
		r.RecvL3BitsPerSecond = r.RecvPPS * float64(r.RecvL3Bytes) / float64(r.RecvPackets) * 8
	}
	return r
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// MaxTableFlows is how many flows WriteTable lists one by one; the totals cover all of them.
const MaxTableFlows = 64

// WriteTable writes the report as an aligned text table: a summary line, one row per flow (the
// first MaxTableFlows), and a total row.
func (r Report) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%s -> %s, %s, %d B frames, %d flows, %v\n", r.Interface, r.RecvInterface, r.Method,
		r.FrameSize, len(r.Flows), r.Duration.Round(time.Millisecond)); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "flow\tsrc\tdst\tsent pkts\trecv pkts\tsent L3 B\trecv L3 B\tlost\tloss %\tdup\treord\trecv pps\trecv L3 bit/s\t")
	for i, f := range r.Flows {
		if i == MaxTableFlows {
			fmt.Fprintf(tw, "…\t%d more flows\t\t\t\t\t\t\t\t\t\t\t\t\n", len(r.Flows)-MaxTableFlows)
			break
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%d\t%d\t%.0f\t%s\t\n", f.Flow, f.Src, f.Dst,
			f.SentPackets, f.RecvPackets, f.SentL3Bytes, f.RecvL3Bytes, f.Lost, 100*f.LossRatio,
			f.Duplicates, f.Reordered, f.RecvPPS, siBits(f.RecvL3BitsPerSecond))
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t%d\t%d\t%d\t%d\t%.3f\t\t\t%.0f\t%s\t\n", r.SentPackets, r.RecvPackets,
		r.SentL3Bytes, r.RecvL3Bytes, r.Lost, 100*r.LossRatio, r.RecvPPS, siBits(r.RecvL3BitsPerSecond))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	if _, err := fmt.Fprintf(w, "sent %.0f pps, %s of frames, %s of L3; retries %d; receiver: foreign %d, corrupt %d, kernel drops %d\n",
		r.SentPPS, siBits(r.SentFrameBitsPerSecond), siBits(r.SentL3BitsPerSecond), r.Retries, r.Foreign, r.Corrupt, r.KernelDrops); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	return nil
}

// siBits formats a bit rate with an SI prefix ("1.23 Gbit/s").
func siBits(v float64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if v >= u.div {
			return fmt.Sprintf("%.2f %s", v/u.div, u.name)
		}
	}
	return fmt.Sprintf("%.0f bit/s", v)
}

// WriteJSON writes the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("report: encode JSON: %w", err)
	}
	return nil
}
