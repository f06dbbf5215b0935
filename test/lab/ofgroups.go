package lab

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Reading ovs-ofctl's dumps of groups, for tests that watch a group change under traffic.

// GroupStats is one group's line of ovs-ofctl dump-group-stats (OpenFlow 1.5 prints the
// duration).
type GroupStats struct {
	Duration float64  // seconds since the group was added (a modification keeps it)
	Packets  uint64   // since the group was added or last modified (Open vSwitch 3.1)
	Buckets  []uint64 // each bucket's packet count, in order
}

var (
	groupDurationRe = regexp.MustCompile(`duration=([0-9.]+)s`)
	groupPacketsRe  = regexp.MustCompile(`(?:^|,)packet_count=([0-9]+)`)
	groupBucketRe   = regexp.MustCompile(`bucket[0-9]+:packet_count=([0-9]+)`)
	groupWeightRe   = regexp.MustCompile(`bucket=(?:bucket_id:[0-9]+,)?(?:weight:([0-9]+),)?`)
)

// groupLine returns the line of group id in a dump (dump-groups or dump-group-stats).
func groupLine(dump string, id uint32) (string, bool) {
	prefix := "group_id=" + strconv.FormatUint(uint64(id), 10) + ","
	for l := range strings.Lines(dump) {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
			return l, true
		}
	}
	return "", false
}

// ParseGroupStats reads group id's duration and counters from the output of dump-group-stats.
func ParseGroupStats(dump string, id uint32) (GroupStats, error) {
	l, ok := groupLine(dump, id)
	if !ok {
		return GroupStats{}, fmt.Errorf("dump-group-stats: no group %d in:\n%s", id, dump)
	}
	var st GroupStats
	d := groupDurationRe.FindStringSubmatch(l)
	p := groupPacketsRe.FindStringSubmatch(l)
	if d == nil || p == nil {
		return GroupStats{}, fmt.Errorf("dump-group-stats: no duration or packet_count in %q", l)
	}
	st.Duration, _ = strconv.ParseFloat(d[1], 64)
	st.Packets, _ = strconv.ParseUint(p[1], 10, 64)
	for _, m := range groupBucketRe.FindAllStringSubmatch(l, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		st.Buckets = append(st.Buckets, n)
	}
	return st, nil
}

// ParseGroupWeights reads group id's bucket weights from the output of dump-groups (a bucket
// printed without weight has Open vSwitch's default, 1).
func ParseGroupWeights(dump string, id uint32) ([]uint16, error) {
	l, ok := groupLine(dump, id)
	if !ok {
		return nil, fmt.Errorf("dump-groups: no group %d in:\n%s", id, dump)
	}
	var w []uint16
	for _, m := range groupWeightRe.FindAllStringSubmatch(l, -1) {
		wi := uint16(1)
		if m[1] != "" {
			n, _ := strconv.ParseUint(m[1], 10, 16)
			wi = uint16(n)
		}
		w = append(w, wi)
	}
	return w, nil
}

// ParseAggregatePackets reads the packet count from the output of dump-aggregate.
func ParseAggregatePackets(dump string) (uint64, error) {
	m := groupPacketsRe.FindStringSubmatch(strings.ReplaceAll(dump, " ", ","))
	if m == nil {
		return 0, fmt.Errorf("dump-aggregate: no packet_count in %q", dump)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n, nil
}

// WeightSchedule is the bucket weights of a 3-bucket select group that the group tests set
// one after the other under traffic: a bucket going to 0 and back, and one taking most.
func WeightSchedule() [][3]uint16 {
	return [][3]uint16{{10, 10, 10}, {20, 10, 0}, {0, 10, 10}, {10, 0, 30}, {10, 10, 0}, {10, 10, 10}}
}
