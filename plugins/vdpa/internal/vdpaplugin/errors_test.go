package vdpaplugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
)

// TestLibraryErrorsCrossTheBoundary drives the library's refusals through the plugin and the
// real gRPC shims, from fixtures, facts and options alone: each arrives at the daemon with the
// contract code for its library code, the library code itself and its advice in the message.
func TestLibraryErrorsCrossTheBoundary(t *testing.T) {
	noDPDK := func(f *api.HostFacts) { f.DPDKInitialized = false }
	cases := []struct {
		fixture string
		edit    func(*simhost.Fixture)
		facts   func(*api.HostFacts)
		req     api.PortRequest
		code    vdpa.Code
		says    string
	}{
		{"cx6dx-switchdev", nil, nil, vdpaPort("vm1", "mac", "02:00"), vdpa.CodeInvalidRequest, "6-byte"},
		{"cx6dx-nomodules", nil, nil, vdpaPort("vm1"), vdpa.CodeNoNetlink, "modprobe vdpa mlx5_vdpa vhost_vdpa"},
		{"cx6dx-switchdev", func(f *simhost.Fixture) {
			f.Remove("sys/bus/vdpa/drivers/virtio_vdpa")
			f.Remove("sys/module/virtio_vdpa")
		}, nil, vdpaPort("c1", "bus-driver", "virtio_vdpa"), vdpa.CodeNoBusDriver, "modprobe virtio_vdpa"},
		{"bluefield-dpu", nil, nil, vdpaPort("vm1", "eswitch", "skip"), vdpa.CodeNoMgmtDev, "stub"},
		{"cx6dx-switchdev", nil, nil, vdpaPort("vm1", "pf", "0000:99:00.0"), vdpa.CodePFNotFound, "lspci"},
		{"intel-e810", nil, nil, vdpaPort("vm1", "pf", "0000:3b:00.0"), vdpa.CodePFNotMLX5, "mlx5_core"},
		{"cx6dx-switchdev", nil, nil, vdpaPort("vm1", "vf", "8"), vdpa.CodeSRIOVCap, "sriov_totalvfs 8"},
		{"cx6dx-inuse", nil, nil, vdpaPort("vm4", "vf", "3"), vdpa.CodeSRIOVBusy, "vdpa device vdpa0"},
		{"bluefield-dpu", nil, nil, vdpaPort("vm1", "mode", "dpdk-pmd"), vdpa.CodeEswitchDenied, "DPU"},
		{"cx6dx-kernel-5.15", nil, nil, vdpaPort("vm1", "mac", "02:00:00:00:00:01"), vdpa.CodeAttrUnsupported, ">= 5.16"},
		{"cx6dx-switchdev", nil, nil, vdpaPort("vm1", "max-vqp", "200"), vdpa.CodeMaxVQP, "limit 128"},
		{"cx6dx-inuse", nil, nil, vdpaPort("vm1", "vf", "1", "vdpa-name", "vdpa0"), vdpa.CodeExists, "vdpa dev del vdpa0"},
		{"cx6dx-switchdev", func(f *simhost.Fixture) { f.Knobs["udev"] = "off" }, nil, vdpaPort("vm1", "vf", "1"), vdpa.CodeCharDevTimeout, "udevadm"},
		{"bluefield-dpu", nil, nil, vdpaPort("vm1", "eswitch", "skip", "mode", "dpdk-pmd"), vdpa.CodeRepresentorNotFound, "DPU"},
		{"cx6dx-inuse", nil, nil, vdpaPort("vm1", "vf", "0"), vdpa.CodeVFInUse, "one per VF"},
		{"cx6dx-inuse", nil, nil, vdpaPort("vm1", "vf", "0", "mode", "dpdk-pmd"), vdpa.CodeClassConflict, "vdpa dev del vdpa0"},
		{"cx6dx-switchdev", nil, noDPDK, vdpaPort("vm1", "vf", "1"), vdpa.CodeOVSNoDPDK, "dpdk-init=true"},
		{"cx6dx-switchdev", nil, nil, vdpaPort("vm1", "vf", "1", "mode", "ovs-fork"), vdpa.CodeOVSNoDPDKVDPA, "NVIDIA"},
	}
	for _, c := range cases {
		t.Run(string(c.code), func(t *testing.T) {
			_, h := setup(t, c.fixture, c.edit, c.facts)
			_, err := h.Attach(c.req)
			checkRefused(t, err, c.code, c.says)
		})
	}
}

// failing is the plugin with an Attach that fails with a given library error, to carry every
// code of the catalogue through the shims.
type failing struct {
	*Plugin
	err error
}

func (f failing) Attach(context.Context, api.PortRequest) (api.Attachment, error) {
	return api.Attachment{}, apiError("vm1", f.err)
}

// TestEveryCodeKeepsItsCode: every code of the library's catalogue, wrapped as the library
// wraps kernel errors, crosses the real gRPC shims with its contract code, its library code and
// its advice; an INVALID_REQUEST keeps its problem; context errors and errors outside the
// catalogue get DeadlineExceeded and Unavailable.
func TestEveryCodeKeepsItsCode(t *testing.T) {
	k := bootKernel(t, loadFixture(t, "cx6dx-switchdev", nil))
	p := newPlugin(t, k)
	for _, code := range vdpa.Codes {
		lib := &vdpa.Error{Code: code, Object: "0000:65:00.3", Msg: "what to do about " + string(code), Field: "vf"}
		conn := sdktest.Connect(t, failing{p, lib})
		_, err := conn.PortProvider.Attach(t.Context(), vdpaPort("vm1"))
		if api.CodeOf(err) != codeOf(code) || !strings.Contains(err.Error(), string(code)+": 0000:65:00.3: what to do about "+string(code)) {
			t.Errorf("%s: got %v (%s), want %s keeping the library's text", code, err, api.CodeOf(err), codeOf(code))
		}
		var e *api.Error
		if code == vdpa.CodeInvalidRequest && (!errors.As(err, &e) || len(e.Problems) != 1 || e.Problems[0].Field != "options.vf") {
			t.Errorf("INVALID_REQUEST lost its problem: %#v", err)
		}
	}
	wantCodes := map[vdpa.Code]api.Code{vdpa.CodeInvalidRequest: api.InvalidArgument, vdpa.CodePFNotFound: api.NotFound,
		vdpa.CodeRepresentorNotFound: api.NotFound, vdpa.CodeExists: api.AlreadyExists, vdpa.CodeCharDevTimeout: api.Unavailable,
		vdpa.CodeKernel: api.Unavailable, vdpa.CodeVFInUse: api.FailedPrecondition, vdpa.CodeNoNetlink: api.FailedPrecondition}
	for lib, want := range wantCodes {
		if codeOf(lib) != want {
			t.Errorf("codeOf(%s) = %s, want %s", lib, codeOf(lib), want)
		}
	}
	for _, c := range []struct {
		err  error
		want api.Code
	}{
		{context.DeadlineExceeded, api.DeadlineExceeded},
		{errors.New("read sys/bus/pci/devices: permission denied"), api.Unavailable},
	} {
		conn := sdktest.Connect(t, failing{p, c.err})
		if _, err := conn.PortProvider.Attach(t.Context(), vdpaPort("vm1")); api.CodeOf(err) != c.want {
			t.Errorf("%v: got %v, want %s", c.err, err, c.want)
		}
	}
}
