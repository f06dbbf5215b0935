//go:build linux

package flowmonplugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/test/lab"
)

// TestGenJob runs a flowmon-gen job over a veth pair (sent on one end, counted on the other)
// and checks its Stats: the run ends, frames were received on every flow, and every frame sent
// was either received or counted in the receiver's kernel drops (a loaded host may starve the
// receiver; the loss is then counted, never silent).
func TestGenJob(t *testing.T) {
	lab.Require(t, lab.NeedNetns)
	veth := lab.NewVethPair(t, lab.VethSpec{DisableOffloads: true})
	p := New(Options{DataDir: testkit.ShortTempDir(t, "fmgen-")})
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	cfg := fmt.Sprintf(`{"interface":%q,"receive_interface":%q,"frame_size":128,"flows":8,"rate_pps":20000,"duration_ms":300}`, veth.A.Name, veth.B.Name)
	if _, err := p.Start(t.Context(), api.Job{Name: "g1", Type: JobGen, Config: []byte(cfg)}); err != nil {
		t.Fatal(err)
	}
	var metrics map[string]float64
	lab.WaitFor(t, 60*time.Second, "the generator run to end", func(ctx context.Context) error {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		metrics = map[string]float64{}
		_ = p.Stats(sctx, api.StatsRequest{Jobs: []string{"g1"}}, func(s api.StatsSample) error {
			for _, m := range s.Metrics {
				metrics[fmt.Sprint(m.Name, m.Labels["flow"])] = m.Value
			}
			cancel()
			return nil
		})
		if metrics["flowmon_gen_running"] != 0 {
			return fmt.Errorf("still running: %v", metrics)
		}
		return nil
	})
	sent, recv, drops := metrics["flowmon_gen_sent_packets"], metrics["flowmon_gen_received_packets"], metrics["flowmon_gen_receiver_kernel_drops"]
	if sent == 0 || recv == 0 || sent != recv+drops || metrics["flowmon_gen_lost_packets"] != sent-recv {
		t.Fatalf("sent %v, received %v, receiver kernel drops %v, lost %v: want frames received and every one sent received or counted as dropped",
			sent, recv, drops, metrics["flowmon_gen_lost_packets"])
	}
	if drops > 0 {
		t.Logf("the receiver's socket dropped %v frames (a starved receiver)", drops)
	}
	for i := range 8 {
		fs, fr := metrics[fmt.Sprint("flowmon_gen_flow_sent_packets", i)], metrics[fmt.Sprint("flowmon_gen_flow_received_packets", i)]
		if fs == 0 || fr == 0 || fr > fs || (drops == 0 && fs != fr) {
			t.Errorf("flow %d: sent %v, received %v (receiver kernel drops %v)", i, fs, fr, drops)
		}
	}
	if h, _ := p.Health(t.Context()); h.State != api.HealthOK {
		t.Errorf("health after a clean run: %+v", h)
	}
}
