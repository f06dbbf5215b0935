//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/test/lab"
)

// largestPort returns the largest ApplyPort the limits allow, near every bound at once:
// limits.MaxInterfacesPerPort interfaces, names of limits.MaxKernelNameBytes, and external_ids
// values filling the port to just under limits.MaxPortBytes.
func largestPort() (*ovsplanev1.Port, int) {
	p := &ovsplanev1.Port{Name: "bond-largest-00", BondMode: "balance-slb",
		ExternalIds: map[string]string{"note": strings.Repeat("p", 2048)}}
	size := len(p.Name) + 4 + 2048
	per := (limits.MaxPortBytes - size - 64) / limits.MaxInterfacesPerPort
	for i := range limits.MaxInterfacesPerPort {
		name := fmt.Sprintf("largest-m%06d", i) // 15 bytes
		val := strings.Repeat("v", per-len(name)-len("internal")-len("note"))
		p.Interfaces = append(p.Interfaces, &ovsplanev1.Interface{Name: name, Type: "internal",
			ExternalIds: map[string]string{"note": val}})
		size += len(name) + len("internal") + len("note") + len(val)
	}
	return p, size
}

// BenchmarkLimitsPeakRSS (issue 12 item 2): the daemon's peak RSS (VmHWM) at rest, after it
// applied the largest port the limits allow, and after it refused a 100,000-interface
// ApplyPort (3.3 MB, under the API's 4 MiB cap) — the request that took it from 26 to 445 MB
// before the limits.
//
//	go test -run '^$' -bench BenchmarkLimitsPeakRSS -benchtime 1x ./bench/
func BenchmarkLimitsPeakRSS(b *testing.B) {
	lab.Require(b, lab.NeedOVS)
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		db := lab.StartOVSDB(b)
		db.StartOVSVswitchd(b, lab.OVSVswitchdSpec{Mode: lab.Dummy})
		d := newBenchDaemon(b, db)
		d.start(ctx)
		_, rest := d.rssKB()

		port, size := largestPort()
		t0 := time.Now()
		res, err := d.API.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: port}))
		if err != nil {
			b.Fatalf("the largest allowed port (%d bytes of names, keys and values) was refused: %v", size, err)
		}
		took := time.Since(t0)
		_, largest := d.rssKB()
		// Four more of them: what five largest ports cost conf.db (issue 12 saw 19 KB → 40 MB
		// for five ports with 3.9 MB external_ids values).
		dbBefore := fileSize(b, db.DBPath)
		for i := range 4 {
			more, _ := largestPort()
			more.Name = fmt.Sprintf("bond-largest-%02d", i+1)
			for j, in := range more.Interfaces {
				in.Name = fmt.Sprintf("largest%d-m%05d", i+1, j)
			}
			if _, err := d.API.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: more})); err != nil {
				b.Fatal(err)
			}
		}
		_, five := d.rssKB()
		grown := fileSize(b, db.DBPath) - dbBefore

		bond := &ovsplanev1.Port{Name: "bond0", BondMode: "balance-slb"}
		for i := range 100000 {
			bond.Interfaces = append(bond.Interfaces, &ovsplanev1.Interface{Name: fmt.Sprintf("m%d", i), Type: "internal"})
		}
		t1 := time.Now()
		_, err = d.API.ApplyPort(ctx, connect.NewRequest(&ovsplanev1.ApplyPortRequest{Bridge: "br0", Port: bond}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			b.Fatalf("100,000 interfaces: %v, want InvalidArgument", err)
		}
		refused := time.Since(t1)
		_, after := d.rssKB()
		b.Logf("limits: peak RSS %.1f MB at rest; %.1f MB after the largest allowed port (%d interfaces, %d bytes, %s, state %s); %.1f MB after four more (conf.db +%.0f KB for them); %.1f MB after refusing 100,000 interfaces (in %s)",
			float64(rest)/1024, float64(largest)/1024, len(port.Interfaces), size, took.Round(time.Millisecond),
			res.Msg.GetPort().GetStatus().GetState(), float64(five)/1024, float64(grown)/1000, float64(after)/1024, refused.Round(time.Millisecond))
		b.ReportMetric(float64(five)/1024, "five-largest-peak-rss-MB")
		b.ReportMetric(float64(grown)/1000/4, "confdb-KB-per-largest-port")
		b.ReportMetric(float64(rest)/1024, "rest-peak-rss-MB")
		b.ReportMetric(float64(largest)/1024, "largest-peak-rss-MB")
		b.ReportMetric(float64(after)/1024, "refused-100k-peak-rss-MB")
		b.ReportMetric(took.Seconds(), "largest-apply-s")
		b.ReportMetric(refused.Seconds(), "refuse-100k-s")
		d.stop()
		cancel()
	}
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}
