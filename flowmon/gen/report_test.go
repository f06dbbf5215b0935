package gen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestReportComparesPerFlow(t *testing.T) {
	s := validSpec()
	s.Flows, s.FrameSize = 2, 114 // 100 L3 bytes per frame
	start := time.Unix(1000, 0)
	sent := Sent{Spec: s, Method: MethodRing, Start: start, End: start.Add(time.Second), Packets: 21}
	recv := Received{Interface: "rx0", Flows: []FlowRx{
		{Packets: 11, L3Bytes: 1100, FrameBytes: 1254, First: start, Last: start.Add(time.Second), LatencySum: 11 * time.Millisecond},
		{Packets: 9, L3Bytes: 900, FrameBytes: 1026, Duplicates: 1, First: start, Last: start.Add(500 * time.Millisecond)},
	}, Foreign: 3}
	r := NewReport(sent, recv)
	f0, f1 := r.Flows[0], r.Flows[1]
	if f0.SentPackets != 11 || f0.SentL3Bytes != 1100 || f0.Lost != 0 || f0.LatencyAvg != time.Millisecond {
		t.Errorf("flow 0: %+v", f0)
	}
	// Flow 1 was sent 10, received 9 of which one duplicate: 8 distinct, 2 lost.
	if f1.SentPackets != 10 || f1.Lost != 2 || f1.LossRatio != 0.2 || f1.RecvL3Bytes != 900 {
		t.Errorf("flow 1: %+v", f1)
	}
	if f0.RecvPPS != 10 || f0.RecvL3BitsPerSecond != 8000 {
		t.Errorf("flow 0 rate: %v pps %v bit/s, want 10 and 8000", f0.RecvPPS, f0.RecvL3BitsPerSecond)
	}
	if r.SentPackets != 21 || r.RecvPackets != 20 || r.Lost != 2 || r.SentPPS != 21 || r.SentL3BitsPerSecond != 21*800 ||
		r.SentFrameBitsPerSecond != 21*114*8 || r.Foreign != 3 || r.Method != "tx-ring" {
		t.Errorf("totals: %+v", r)
	}
	var tb bytes.Buffer
	if err := r.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	table := tb.String()
	for _, want := range []string{"tx-ring", "10.0.0.1:1001", "20.000", "total", "foreign 3"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	var jb bytes.Buffer
	if err := r.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(jb.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Flows[1].Lost != 2 || back.Flows[1].Src != "10.0.0.1:1001" || back.RecvPackets != 20 {
		t.Errorf("JSON round trip: %+v", back)
	}
}

func TestReportTableIsBounded(t *testing.T) {
	s := validSpec()
	s.SrcPorts, s.Flows = 100, 100
	r := NewReport(Sent{Spec: s, Packets: 100}, Received{})
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 2+MaxTableFlows+1+2 {
		t.Errorf("table has %d lines, want %d:\n%s", n, 2+MaxTableFlows+1+2, b.String())
	}
	if !strings.Contains(b.String(), "36 more flows") || r.Lost != 100 {
		t.Errorf("table or loss wrong (lost %d):\n%s", r.Lost, b.String())
	}
}
