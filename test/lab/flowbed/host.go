//go:build linux

package flowbed

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/gen"
	"github.com/ovsplane/ovsplane/test/lab"
)

// NewHost builds only the bed's host side, for a test whose daemon owns br0 and its NetFlow
// export: the OVSDB, the DPDK vswitchd (with spec's max-idle), the namespaces and the veths,
// with IPv6 off as New does. It creates no bridge, no OpenFlow rule, no collector and no NetFlow
// row: Collector is nil, so Run is not for such a bed. PortDevargs gives the devargs of br0's
// ports p1 and p2 (ofport 1 and 2), Forward installs New's rule once they exist, and Send runs
// traffic. Fails the test on any error.
func NewHost(t testing.TB, spec Spec) *Bed {
	t.Helper()
	lab.Require(t, lab.NeedDPDK, lab.NeedNetns)
	if spec.MaxIdleMS == 0 {
		spec.MaxIdleMS = 1000
	}
	b := &Bed{DB: lab.StartOVSDB(t)}
	b.Switch = b.DB.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK,
		OtherConfig: map[string]string{"max-idle": strconv.Itoa(spec.MaxIdleMS)}})
	b.NS1, b.NS2 = lab.NewNetns(t), lab.NewNetns(t)
	for _, ns := range []*lab.Netns{b.NS1, b.NS2} {
		disableIPv6(t, ns, "default", "all")
	}
	b.In = lab.NewVethPair(t, lab.VethSpec{ANetns: b.NS1, DisableOffloads: true})
	b.Out = lab.NewVethPair(t, lab.VethSpec{ANetns: b.NS2, DisableOffloads: true})
	disableIPv6(t, nil, b.In.B.Name, b.Out.B.Name)
	return b
}

// PortDevargs returns the dpdk-devargs New gives br0's ports: p1 an af_packet NIC on In.B, p2
// on Out.B, each with a receive ring of ringFrames frames (0: 4096, as Spec.RingFrames). Call
// it once per bed: every call takes new vdev indexes of the vswitchd.
func (b *Bed) PortDevargs(ringFrames int) (p1, p2 string) {
	if ringFrames == 0 {
		ringFrames = 4096
	}
	ring := ",framecnt=" + strconv.Itoa(ringFrames)
	return b.Switch.AFPacketDevargs(b.In.B.Name) + ring, b.Switch.AFPacketDevargs(b.Out.B.Name) + ring
}

// Forward replaces br0's OpenFlow flows with New's one rule, in_port=1 → output:2. br0 and its
// ports must exist. Fails the test on error.
func (b *Bed) Forward(t testing.TB) {
	t.Helper()
	of := b.Switch.OpenFlowTarget(Bridge)
	(*lab.Netns)(nil).Run(t, "ovs-ofctl", "del-flows", of)
	(*lab.Netns)(nil).Run(t, "ovs-ofctl", "add-flow", of, "in_port=1,actions=output:2")
}

// Send generates spec's frames (spec.Interface must be In.A's, as GenSpec sets it) with a
// receiver counting on Out.A, and returns both views once the receiver has every frame, or has
// counted nothing new for 3 s, or 30 s have passed. Fails the test on error.
func (b *Bed) Send(t testing.TB, spec gen.Spec) gen.Report {
	t.Helper()
	var rx *gen.Receiver
	if err := b.NS2.Do(func() error {
		var err error
		rx, err = gen.NewReceiver(gen.ReceiverSpec{Interface: b.Out.A.Name, Flows: spec.Flows})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	ctx, cancel := context.WithCancel(context.Background())
	rxDone := make(chan error, 1)
	go func() { rxDone <- rx.Run(ctx) }()
	stopRx := sync.OnceValue(func() error {
		cancel()
		return <-rxDone
	})
	defer stopRx()
	var g *gen.Generator
	if err := b.NS1.Do(func() error {
		var err error
		g, err = gen.NewGenerator(spec)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	sent, err := g.Run(t.Context())
	if err != nil {
		t.Fatalf("generator: %v", err)
	}
	settle(func() uint64 { return received(rx.Snapshot()) }, sent.Packets, 3*time.Second, 30*time.Second)
	if err := stopRx(); err != nil {
		t.Errorf("receiver: %v", err)
	}
	return gen.NewReport(sent, rx.Snapshot())
}
