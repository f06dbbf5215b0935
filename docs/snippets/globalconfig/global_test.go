package globalconfig

import (
	"testing"

	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
)

func TestContribute(t *testing.T) {
	h := sdktest.NewFakeHost(t, New())
	if err := h.Configure([]byte(`{"iommu": true}`)); err != nil {
		t.Fatal(err)
	}
	g, err := h.Contribute()
	if err != nil || g.OtherConfig["vhost-iommu-support"] != "true" {
		t.Fatalf("Contribute = %+v, %v", g, err)
	}
	if err := h.Configure([]byte(`{"iommu": "yes"}`)); err == nil {
		t.Fatal("a string for iommu was accepted")
	}
}
