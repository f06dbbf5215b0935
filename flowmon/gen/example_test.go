package gen_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/gen"
)

// Example runs 8 flows of 512-byte frames at 10k frames/s for 2 s from veth0 to veth1 (both in
// this namespace here; open each in its interface's namespace otherwise) and prints the per-flow
// table. Not run: it needs CAP_NET_RAW and the interfaces.
func Example() {
	ctx := context.Background()
	spec := gen.Spec{
		Interface: "veth0",
		SrcMAC:    net.HardwareAddr{0x02, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.1.1"),
		SrcPort: 40000, SrcPorts: 8, DstPort: 9000,
		FrameSize: 512, Flows: 8, PacketsPerSecond: 10000, Duration: 2 * time.Second,
	}
	rx, err := gen.NewReceiver(gen.ReceiverSpec{Interface: "veth1", Flows: spec.Flows})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rx.Close()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- rx.Run(rctx) }()

	g, err := gen.NewGenerator(spec) // validates the spec first
	if err != nil {
		fmt.Println(err)
		return
	}
	sent, err := g.Run(ctx)
	if err != nil {
		fmt.Println(err)
	}
	time.Sleep(100 * time.Millisecond) // let the last frames arrive
	stop()
	<-done
	report := gen.NewReport(sent, rx.Snapshot())
	_ = report.WriteTable(os.Stdout) // or report.WriteJSON
}
