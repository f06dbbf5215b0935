package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
)

// jobInfo is a job of the daemon's PluginStats answer with one peer (2) and two links.
func jobInfo(at time.Time, txA, txB float64) *ovsplanev1.JobInfo {
	peer := map[string]string{"peer": "2"}
	la := map[string]string{"peer": "2", "link": "eth1"}
	lb := map[string]string{"peer": "2", "link": "eth2"}
	return &ovsplanev1.JobInfo{Plugin: "stripe", Name: "s0", Type: "stripe", State: ovsplanev1.JobState_JOB_STATE_RUNNING,
		SampleTime: at.UTC().Format(time.RFC3339Nano),
		Metrics: []*ovsplanev1.JobMetric{
			{Name: "stripe_peers_known", Value: 1},
			{Name: "stripe_peer_known", Value: 1, Labels: peer},
			{Name: "stripe_sent_bytes", Value: 3 << 20, Labels: peer},
			{Name: "stripe_retransmits", Value: 7, Labels: peer},
			{Name: "stripe_reorder_depth_max", Value: 12, Labels: peer},
			{Name: "stripe_link_tx_bytes", Value: txA, Labels: la},
			{Name: "stripe_link_usable", Value: 1, Labels: la},
			{Name: "stripe_link_tx_load", Value: 0.25, Labels: la},
			{Name: "stripe_link_balance_degree", Value: -0.125, Labels: la},
			{Name: "stripe_link_tx_bytes", Value: txB, Labels: lb},
			{Name: "stripe_link_usable", Value: 0, Labels: lb},
			{Name: "stripe_fair_share_bytes_per_second", Value: 25e6, Labels: peer},
			{Name: "stripe_app_share_bytes_per_second", Value: 25e6, Labels: map[string]string{"peer": "2", "app": "video"}},
			{Name: "stripe_app_send_bytes_per_second", Value: 12.5e6, Labels: map[string]string{"peer": "2", "app": "video"}},
			{Name: "stripe_app_pacing_drops", Value: 3, Labels: map[string]string{"peer": "2", "app": "video"}},
		}}
}

// TestTopFrames: the first frame has no rates; the second computes them from the samples'
// byte counters and times; the same sample again keeps them; a job filter hides other jobs.
func TestTopFrames(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	prev := previous{}
	rows := frame([]*ovsplanev1.JobInfo{jobInfo(t0, 1e6, 0)}, "", prev)
	if len(rows) != 1 || len(rows[0].links) != 2 || rows[0].links[0].key.link != "eth1" || rows[0].links[0].txRate != -1 {
		t.Fatalf("first frame %+v", rows)
	}
	// 2 s later: eth1 sent 5 MB more (20 Mbit/s), eth2 nothing.
	second := jobInfo(t0.Add(2*time.Second), 6e6, 0)
	rows = frame([]*ovsplanev1.JobInfo{second}, "", prev)
	if l := rows[0].links; l[0].txRate != 20 || l[1].txRate != 0 {
		t.Fatalf("rates %v and %v Mbit/s, want 20 and 0", l[0].txRate, l[1].txRate)
	}
	again := frame([]*ovsplanev1.JobInfo{second}, "", prev)
	if again[0].links[0].txRate != 20 {
		t.Errorf("the same sample again: rate %v, want 20 kept", again[0].links[0].txRate)
	}
	var out bytes.Buffer
	if err := render(&out, t0, rows); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"JOB s0", "PEER 2", "running", "known yes", "sent 3.0 MiB", "retransmits 7", "reorder 0 (max 12)",
		"eth1  yes     0     20.0", "0.250", "-0.125", "eth2  no",
		"fair share 200.0 Mbit/s", "video  200.0         100.0      0.0"} {
		if !strings.Contains(text, want) {
			t.Errorf("frame lacks %q:\n%s", want, text)
		}
	}
	if rows := frame([]*ovsplanev1.JobInfo{second}, "other", prev); len(rows) != 0 {
		t.Errorf("filtered frame %+v", rows)
	}
	out.Reset()
	if err := render(&out, t0, nil); err != nil || !strings.Contains(out.String(), "no stripe jobs") {
		t.Errorf("empty frame: %v\n%s", err, out.String())
	}
}
