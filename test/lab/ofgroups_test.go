package lab

import (
	"slices"
	"testing"
)

// Dumps in the format of ovs-ofctl 3.1 (-O OpenFlow15 --no-names).
const (
	groupsDump = `OFPST_GROUP_DESC reply (OF1.5) (xid=0x2):
 group_id=5,type=all,bucket=bucket_id:0,actions=output:1
 group_id=2298413056,type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:20,actions=output:2,bucket=bucket_id:1,weight:10,actions=output:3,bucket=bucket_id:2,weight:0,actions=output:4
`
	groupStatsDump = `OFPST_GROUP reply (OF1.5) (xid=0x2):
 group_id=5,duration=9.100s,ref_count=0,packet_count=0,byte_count=0,bucket0:packet_count=0,byte_count=0
 group_id=2298413056,duration=3.121s,ref_count=1,packet_count=1422,byte_count=91008,bucket0:packet_count=954,byte_count=61056,bucket1:packet_count=468,byte_count=29952,bucket2:packet_count=0,byte_count=0
`
	aggregateDump = "OFPST_AGGREGATE reply (OF1.5) (xid=0x2): packet_count=2840 byte_count=181760 flow_count=1\n"
)

func TestParseGroupDumps(t *testing.T) {
	w, err := ParseGroupWeights(groupsDump, 2298413056)
	if err != nil || !slices.Equal(w, []uint16{20, 10, 0}) {
		t.Errorf("weights of the select group: %v, %v", w, err)
	}
	if w, err := ParseGroupWeights(groupsDump, 5); err != nil || !slices.Equal(w, []uint16{1}) {
		t.Errorf("weights of the all group (default 1): %v, %v", w, err)
	}
	if _, err := ParseGroupWeights(groupsDump, 229841305); err == nil {
		t.Errorf("a group id that is only a prefix of one in the dump was found")
	}
	st, err := ParseGroupStats(groupStatsDump, 2298413056)
	if err != nil || st.Duration != 3.121 || st.Packets != 1422 || !slices.Equal(st.Buckets, []uint64{954, 468, 0}) {
		t.Errorf("stats: %+v, %v", st, err)
	}
	if _, err := ParseGroupStats("OFPST_GROUP reply (OF1.5) (xid=0x2):\n group_id=7,ref_count=1\n", 7); err == nil {
		t.Errorf("a stats line without duration was accepted")
	}
	if n, err := ParseAggregatePackets(aggregateDump); err != nil || n != 2840 {
		t.Errorf("aggregate: %d, %v", n, err)
	}
	if _, err := ParseAggregatePackets("nothing"); err == nil {
		t.Errorf("an aggregate without packet_count was accepted")
	}
}
