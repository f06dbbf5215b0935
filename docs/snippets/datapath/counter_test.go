package datapath

import (
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

func TestTicker(t *testing.T) {
	h := sdktest.NewFakeHost(t, New())
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartJob(api.Job{Name: "t1", Type: "ticker", Config: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	samples, err := h.Stats(api.StatsRequest{IntervalMillis: 20}, 3)
	if err != nil || samples[2].Job != "t1" || samples[2].Metrics[0].Value < samples[0].Metrics[0].Value {
		t.Fatalf("samples %+v, %v", samples, err)
	}
	if err := h.StopJob("t1"); err != nil {
		t.Fatal(err)
	}
}
