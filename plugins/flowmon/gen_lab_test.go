//go:build linux

package main

import (
	"encoding/json"
	"testing"

	"github.com/ovsplane/ovsplane/flowmon/gen"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestGenCommand runs `flowmon gen` over a veth pair and checks its JSON report: every flow
// received what was sent, or, on a host loaded enough to starve the receiver, every frame not
// received is counted in the receiver's kernel drops.
func TestGenCommand(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	veth := lab.NewVethPair(t, lab.VethSpec{DisableOffloads: true})
	code, out, errOut := cli("gen", "--interface", veth.A.Name, "--receive-interface", veth.B.Name, "--frame-size", "256", "--flows", "4",
		"--rate", "10000", "--duration", "200ms", "--format", "json")
	if code != 0 {
		t.Fatalf("flowmon gen: exit %d: %s", code, errOut)
	}
	var rep gen.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if rep.FrameSize != 256 || len(rep.Flows) != 4 || rep.SentPackets == 0 || rep.RecvPackets == 0 ||
		rep.RecvPackets+rep.KernelDrops != rep.SentPackets || rep.Lost != int64(rep.SentPackets)-int64(rep.RecvPackets) {
		t.Fatalf("report: frame %d, %d flows, sent %d, received %d, receiver kernel drops %d, lost %d",
			rep.FrameSize, len(rep.Flows), rep.SentPackets, rep.RecvPackets, rep.KernelDrops, rep.Lost)
	}
	for _, f := range rep.Flows {
		if f.SentPackets == 0 || f.RecvPackets == 0 || f.RecvPackets > f.SentPackets || (rep.KernelDrops == 0 && f.RecvPackets != f.SentPackets) {
			t.Errorf("flow %d (%s → %s): sent %d, received %d (receiver kernel drops %d)", f.Flow, f.Src, f.Dst, f.SentPackets, f.RecvPackets, rep.KernelDrops)
		}
	}
}
