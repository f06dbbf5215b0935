//go:build linux

package lab_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

func TestShapeLimitsThroughput(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedTraffic)
	ns1, ns2 := lab.NewNetns(t), lab.NewNetns(t)
	v := lab.NewVethPair(t, lab.VethSpec{ANetns: ns1, BNetns: ns2, AAddr: "10.98.0.1/24", BAddr: "10.98.0.2/24"})

	st, err := lab.Ping(t.Context(), ns1, "10.98.0.2", 2)
	if err != nil || st.Received != 2 || st.AvgRTT <= 0 {
		t.Fatalf("ping over a veth: %+v, %v", st, err)
	}
	lab.Shape(t, ns1, v.A.Name, "20mbit")
	tr, err := lab.TCPTransfer(t.Context(), ns1, ns2, "10.98.0.2", 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	if tr.BitsPerSecond > 30e6 || tr.BitsPerSecond < 5e6 {
		t.Errorf("throughput through a 20mbit tbf = %.1f Mbit/s", tr.BitsPerSecond/1e6)
	}
	t.Logf("20mbit tbf: %d bytes in %.2fs, %.1f Mbit/s", tr.Bytes, tr.Seconds, tr.BitsPerSecond/1e6)

	if st, err := lab.Ping(t.Context(), ns1, "fd00::1", 1); err == nil {
		t.Errorf("ping to an address nobody has succeeded: %+v", st)
	}
}

func TestCleanupRemovesEverything(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOVS, lab.NeedNetns)
	bridge := "ovlbr" + strconv.Itoa(os.Getpid()%1000000) // a tap in the test's namespace: unique per process
	var left leftovers
	var sleeper chan error
	t.Run("lab", func(t *testing.T) {
		db := lab.StartOVSDB(t)
		ns := lab.NewNetns(t)
		v := lab.NewVethPair(t, lab.VethSpec{BNetns: ns, BAddr: "10.96.0.1/24", MTU: 1400, DisableOffloads: true})
		lab.Shape(t, nil, v.A.Name, "100mbit")
		sw := db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Userspace})
		db.Vsctl(t, "add-br", bridge, "--", "set", "Bridge", bridge, "datapath_type=netdev",
			"--", "add-port", bridge, v.A.Name)
		if _, err := os.Stat("/sys/class/net/" + bridge); err != nil {
			t.Fatalf("bridge tap %s: %v", bridge, err)
		}
		// A process the test forgets inside the namespace: the namespace's cleanup kills it.
		cmd := ns.Command(context.Background(), "sleep", "600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sleeper = make(chan error, 1)
		go func() { sleeper <- cmd.Wait() }()
		left = leftovers{dirs: []string{db.Dir}, netns: []string{ns.Name}, links: []string{v.A.Name, bridge},
			pids: []int{db.PID(), sw.PID(), cmd.Process.Pid}}
	})
	if sleeper != nil {
		select {
		case err := <-sleeper:
			if _, ok := err.(*exec.ExitError); !ok {
				t.Errorf("forgotten sleep ended with %v, want killed", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("forgotten sleep in the namespace still runs 5 s after cleanup")
		}
	}
	assertGone(t, left)
}
