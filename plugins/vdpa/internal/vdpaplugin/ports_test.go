package vdpaplugin

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk/sdktest"
	"github.com/ovsplane/ovsplane/vdpa"
)

// TestValidateNamesTheOption: every malformed option comes back as a problem on that option
// with what to write instead; a port of another type is a problem on "type"; ovs-fork is a
// problem on options.mode on a stock OVS and fine on NVIDIA's; a valid request has none.
// Attach refuses the same requests with InvalidArgument carrying the problems and the code.
func TestValidateNamesTheOption(t *testing.T) {
	_, h := setup(t, "cx6dx-switchdev", nil, nil)
	cases := []struct {
		req   api.PortRequest
		field string
		says  string
	}{
		{vdpaPort("vm1", "vf", "two"), "options.vf", "a VF index"},
		{vdpaPort("vm1", "mac", "02:00"), "options.mac", "6-byte"},
		{vdpaPort("vm1", "max-vqp", "many"), "options.max-vqp", "number of queue pairs"},
		{vdpaPort("vm1", "mtu", "20"), "options.mtu", "68..9978"},
		{vdpaPort("vm1", "mode", "magic"), "options.mode", "kernel, dpdk-pmd or ovs-fork"},
		{vdpaPort("vm1", "vf", "4", "num-vfs", "2"), "options.num-vfs", "does not include vf 4"},
		{vdpaPort("vm1", "mode", "dpdk-pmd", "bus-driver", "vhost_vdpa"), "options.bus-driver", "mode kernel only"},
		{vdpaPort("vm1", "adopt", "perhaps"), "options.adopt", "true or false"},
		{vdpaPort("vm1", "max_vqp", "4"), "options.max_vqp", "known: pf, vf"},
		{api.PortRequest{Bridge: "br0", Name: "vm1", Type: PortType, Options: map[string]string{"vf": "1"}}, "options.pf", "pf is required"},
		{vdpaPort("vm 1"), "name", "letters, digits"},
		// 55 bytes: a port name the library takes, but its job name dpdk-vdpa-<port> would
		// pass the daemon's 64 bytes.
		{vdpaPort(strings.Repeat("v", 55), "mode", "dpdk-pmd"), "name", "at most 54 bytes"},
		{vdpaPort("vm1", "mode", "ovs-fork"), "options.mode", "NVIDIA"},
		{api.PortRequest{Bridge: "br0", Name: "vm1", Type: "veth", Options: map[string]string{"pf": pf0}}, "type", "not a type of this plugin"},
	}
	for _, c := range cases {
		problems, err := h.Validate(c.req)
		if err != nil {
			t.Fatalf("%v: %v", c.req.Options, err)
		}
		if len(problems) != 1 || problems[0].Field != c.field || !strings.Contains(problems[0].Message, c.says) {
			t.Errorf("%s %v: problems %+v, want one on %s saying %q", c.req.Name, c.req.Options, problems, c.field, c.says)
		}
		_, err = h.Attach(c.req)
		var e *api.Error
		if c.field == "options.mode" && c.says == "NVIDIA" {
			continue // valid options: Attach refuses it as a precondition (TestOVSForkNeedsNVIDIAOVS)
		}
		if api.CodeOf(err) != api.InvalidArgument || !asAPI(err, &e) || len(e.Problems) == 0 || e.Problems[0].Field != c.field ||
			!strings.Contains(err.Error(), string(vdpa.CodeInvalidRequest)) {
			t.Errorf("Attach %v: %v, want InvalidArgument on %s", c.req.Options, err, c.field)
		}
	}
	for _, req := range []api.PortRequest{
		vdpaPort("vm1", "vf", "1", "mac", "02:11:22:33:44:55", "max-vqp", "4"),
		vdpaPort(strings.Repeat("v", 54), "mode", "dpdk-pmd"), // its job name has the daemon's 64 bytes
		vdpaPort(strings.Repeat("v", 63)),                     // kernel mode: no job
	} {
		if problems, err := h.Validate(req); err != nil || len(problems) != 0 {
			t.Errorf("valid request %s %v: %+v %v", req.Name, req.Options, problems, err)
		}
	}
	if err := limits.CheckJob(jobPrefix+strings.Repeat("v", maxJobName-len(jobPrefix)), JobType, nil); err != nil {
		t.Errorf("maxJobName is not the daemon's bound: %v", err)
	}
	if err := limits.CheckJob(jobPrefix+strings.Repeat("v", maxJobName-len(jobPrefix)+1), JobType, nil); err == nil {
		t.Errorf("maxJobName is not the daemon's bound: one byte more is accepted")
	}
	h.Facts.IfaceTypes = append(slices.Clone(h.Facts.IfaceTypes), "dpdkvdpa")
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	if problems, err := h.Validate(vdpaPort("vm1", "mode", "ovs-fork")); err != nil || len(problems) != 0 {
		t.Errorf("ovs-fork on NVIDIA's OVS: %+v %v", problems, err)
	}
}

// TestAttachKernelModeTwiceThenDetach: a kernel-mode port on a switchdev host gets the
// representor shape, the /dev/vhost-vdpa-N endpoint, a status saying a restart is required for
// hw-offload, and a state within the daemon's limit; attaching again returns the same answer
// and changes nothing in the kernel; detaching restores the fixture exactly, and a second
// detach (or one of an unknown port) is a no-op.
func TestAttachKernelModeTwiceThenDetach(t *testing.T) {
	k, h := setup(t, "cx6dx-switchdev", nil, nil)
	before := dump(t, k)
	req := vdpaPort("vm1", "vf", "1", "mac", "02:11:22:33:44:55", "max-vqp", "4")
	a, err := h.Attach(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Ports) != 1 || a.Ports[0].Name != "vm1" || len(a.Ports[0].Interfaces) != 1 {
		t.Fatalf("shape %+v", a.Ports)
	}
	ifc := a.Ports[0].Interfaces[0]
	if ifc.Name != "vm1" || ifc.Type != "dpdk" || !reflect.DeepEqual(ifc.Options, map[string]string{"dpdk-devargs": pf0 + ",representor=vf1"}) {
		t.Errorf("interface %+v", ifc)
	}
	if ifc.ExternalIDs["attached-mac"] != "02:11:22:33:44:55" || ifc.ExternalIDs["vdpa-vf"] != "0000:65:00.3" {
		t.Errorf("external_ids %v", ifc.ExternalIDs)
	}
	if a.Endpoints["vhost-vdpa"] != "/dev/vhost-vdpa-0" || a.Endpoints["representor"] != "enp101s0f0npf0vf1" {
		t.Errorf("endpoints %v", a.Endpoints)
	}
	if !strings.Contains(a.Status, "ovs-vswitchd restart required") || !strings.Contains(a.Status, "/dev/vhost-vdpa-0") || strings.Contains(a.Status, "SIMULATED") {
		t.Errorf("status %q", a.Status)
	}
	if len(a.State) > api.MaxStateSize {
		t.Errorf("state %d bytes", len(a.State))
	}
	if st := mustDecode(t, a.State); st.VF != "0000:65:00.3" || len(st.Done) == 0 {
		t.Errorf("state %+v", st)
	}
	if after := dump(t, k); after == before {
		t.Fatal("attach changed nothing in the kernel")
	}

	muts := k.Mutations()
	a2, err := h.Attach(req)
	if err != nil {
		t.Fatal(err)
	}
	if k.Mutations() != muts {
		t.Errorf("second attach made %d kernel changes", k.Mutations()-muts)
	}
	if !reflect.DeepEqual(a, a2) {
		t.Errorf("second attach answered differently:\n%+v\n%+v", a, a2)
	}
	if owned, err := h.List(); err != nil || len(owned) != 1 || owned[0].Name != "vm1" || owned[0].Type != PortType || string(owned[0].State) != string(a.State) {
		t.Errorf("List = %+v, %v", owned, err)
	}

	if err := h.Detach("br0", "vm1"); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, k); after != before {
		t.Errorf("detach did not restore the fixture:\n%s", lineDiff(before, after))
	}
	muts = k.Mutations()
	if err := h.Detach("br0", "vm1"); err != nil {
		t.Errorf("second detach: %v", err)
	}
	if err := h.Detach("br0", "never"); err != nil {
		t.Errorf("detach of an unknown port: %v", err)
	}
	if k.Mutations() != muts {
		t.Errorf("detaching unknown ports changed the kernel")
	}
	if owned, err := h.List(); err != nil || len(owned) != 0 {
		t.Errorf("List after detach = %+v, %v", owned, err)
	}
}

// TestReplayAdoptsAfterRestart: after a plugin restart the daemon replays Attach with the stored
// state: the new process adopts the port (not one kernel change, the same answer), lists it,
// and its Detach — from the stored state alone — restores the fixture exactly.
func TestReplayAdoptsAfterRestart(t *testing.T) {
	k, h := setup(t, "cx6dx-legacy", nil, nil)
	before := dump(t, k)
	a, err := h.Attach(vdpaPort("vm1", "vf", "1", "num-vfs", "4", "mac", "02:11:22:33:44:55"))
	if err != nil {
		t.Fatal(err)
	}
	muts := k.Mutations()
	if err := h.Restart(newPlugin(t, k)); err != nil {
		t.Fatal(err)
	}
	if k.Mutations() != muts {
		t.Errorf("replay made %d kernel changes", k.Mutations()-muts)
	}
	state, _ := h.State("br0", "vm1")
	if string(state) != string(a.State) {
		t.Errorf("replay changed the state:\n%s\n%s", a.State, state)
	}
	if owned, err := h.List(); err != nil || len(owned) != 1 {
		t.Errorf("List after replay = %+v, %v", owned, err)
	}

	// A third process that never saw a replay detaches from the stored state alone.
	fresh := sdktest.NewFakeHost(t, newPlugin(t, k))
	if err := fresh.Configure(nil); err != nil {
		t.Fatal(err)
	}
	conn := fresh.Conn().PortProvider
	req := vdpaPort("vm1", "vf", "1", "num-vfs", "4", "mac", "02:11:22:33:44:55")
	req.State = state
	if err := conn.Detach(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, k); after != before {
		t.Errorf("detach from the stored state did not restore the fixture:\n%s", lineDiff(before, after))
	}
}

// TestFreshHostManyVFs: on a legacy host, a port asking for all 8 VFs records one binding per
// VF; the state still fits (compacted), and detach from it restores the fixture exactly.
func TestFreshHostManyVFs(t *testing.T) {
	k, h := setup(t, "cx6dx-legacy", nil, nil)
	before := dump(t, k)
	a, err := h.Attach(vdpaPort("vm1", "vf", "2", "num-vfs", "8"))
	if err != nil {
		t.Fatal(err)
	}
	st := mustDecode(t, a.State)
	t.Logf("state: %d bytes, %d records, compressed %v", len(a.State), len(st.Done), strings.HasPrefix(string(a.State), gzipPrefix))
	if len(st.Done) < 8 {
		t.Errorf("%d records for 8 new VFs", len(st.Done))
	}
	if err := h.Detach("br0", "vm1"); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, k); after != before {
		t.Errorf("detach did not restore the fixture:\n%s", lineDiff(before, after))
	}
}

// TestVFInUseRefused: a VF with someone else's vDPA device, a VF an interface of the switch
// already uses (seen by the watcher), and a VF one of the plugin's own ports uses are refused
// with VF_IN_USE and no kernel change.
func TestVFInUseRefused(t *testing.T) {
	t.Run("foreign vdpa device", func(t *testing.T) {
		k, h := setup(t, "cx6dx-inuse", nil, nil)
		muts := k.Mutations()
		_, err := h.Attach(vdpaPort("vm1", "vf", "0"))
		checkRefused(t, err, vdpa.CodeVFInUse, "vdpa0")
		if k.Mutations() != muts {
			t.Error("the refused attach changed the kernel")
		}
	})
	t.Run("interface seen by the watcher", func(t *testing.T) {
		k, h := setup(t, "cx6dx-switchdev", nil, nil)
		if _, err := h.Events(api.PortEventBatch{Resync: true, ResyncDone: true, Events: []api.PortEvent{{
			Kind: api.EventAdded, Owner: api.OwnerForeign, Bridge: "br0", Port: "rep1", Interface: "rep1", Type: "dpdk",
			Options: map[string]string{"dpdk-devargs": pf0 + ",representor=[0-1]"}}}}); err != nil {
			t.Fatal(err)
		}
		muts := k.Mutations()
		_, err := h.Attach(vdpaPort("vm1", "vf", "1"))
		checkRefused(t, err, vdpa.CodeVFInUse, `"rep1"`)
		if k.Mutations() != muts {
			t.Error("the refused attach changed the kernel")
		}
		// Once the interface is gone, the VF is free.
		if _, err := h.Events(api.PortEventBatch{Events: []api.PortEvent{{Kind: api.EventRemoved, Interface: "rep1"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Attach(vdpaPort("vm1", "vf", "1")); err != nil {
			t.Errorf("after the interface went: %v", err)
		}
	})
	t.Run("another port of the plugin", func(t *testing.T) {
		k, h := setup(t, "cx6dx-switchdev", nil, nil)
		if _, err := h.Attach(vdpaPort("vm1", "vf", "1", "mode", "dpdk-pmd")); err != nil {
			t.Fatal(err)
		}
		muts := k.Mutations()
		_, err := h.Attach(vdpaPort("vm2", "vf", "1", "mode", "dpdk-pmd"))
		checkRefused(t, err, vdpa.CodeVFInUse, `"vm1"`)
		if k.Mutations() != muts {
			t.Error("the refused attach changed the kernel")
		}
	})
}

// TestOVSForkNeedsNVIDIAOVS: mode ovs-fork is refused (FailedPrecondition, OVS_NO_DPDKVDPA) on
// a stock OVS, and on facts listing dpdkvdpa it attaches a type=dpdkvdpa interface with the
// fork's options and a vhost-user endpoint.
func TestOVSForkNeedsNVIDIAOVS(t *testing.T) {
	k, h := setup(t, "cx6dx-switchdev", nil, nil)
	muts := k.Mutations()
	_, err := h.Attach(vdpaPort("vm1", "vf", "1", "mode", "ovs-fork"))
	checkRefused(t, err, vdpa.CodeOVSNoDPDKVDPA, "NVIDIA")
	if k.Mutations() != muts {
		t.Error("the refused attach changed the kernel")
	}

	k, h = setup(t, "cx6dx-switchdev", nil, forkFacts)
	before := dump(t, k)
	a, err := h.Attach(vdpaPort("vm1", "vf", "1", "mode", "ovs-fork"))
	if err != nil {
		t.Fatal(err)
	}
	ifc := a.Ports[0].Interfaces[0]
	want := map[string]string{"vdpa-socket-path": "/run/ovsplane/vdpa/vm1.sock", "vdpa-accelerator-devargs": "0000:65:00.3",
		"dpdk-devargs": pf0 + ",representor=[1]"}
	if ifc.Type != "dpdkvdpa" || !reflect.DeepEqual(ifc.Options, want) {
		t.Errorf("interface %+v", ifc)
	}
	if a.Endpoints["vhost-user"] != "/run/ovsplane/vdpa/vm1.sock" {
		t.Errorf("endpoints %v", a.Endpoints)
	}
	if err := h.Detach("br0", "vm1"); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, k); after != before {
		t.Errorf("not restored:\n%s", lineDiff(before, after))
	}
}

// TestDPDKPMDEndpoints: with supervise_dpdk_vdpa false, a dpdk-pmd port reports the vhost-user
// socket and the driver process to run, in its endpoints and its status, and has no job.
func TestDPDKPMDEndpoints(t *testing.T) {
	_, h := setup(t, "cx6dx-switchdev", nil, nil)
	if err := h.Configure([]byte(`{"supervise_dpdk_vdpa": false}`)); err != nil {
		t.Fatal(err)
	}
	a, err := h.Attach(vdpaPort("vm2", "vf", "0", "mode", "dpdk-pmd"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Endpoints["vhost-user"] != "/run/ovsplane/vdpa/vm2-0" || !strings.Contains(a.Endpoints["dpdk-vdpa"], "-a 0000:65:00.2,class=vdpa") {
		t.Errorf("endpoints %v", a.Endpoints)
	}
	if ifc := a.Ports[0].Interfaces[0]; ifc.Type != "dpdk" || ifc.Options["dpdk-devargs"] != pf0+",representor=vf0" {
		t.Errorf("interface %+v", ifc)
	}
	if !strings.Contains(a.Status, "run the DPDK vDPA driver: dpdk-vdpa") || len(a.Jobs) != 0 {
		t.Errorf("status %q, jobs %+v", a.Status, a.Jobs)
	}
}

// checkRefused checks a refusal's contract code, library code and advice.
func checkRefused(t *testing.T, err error, code vdpa.Code, says string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	if api.CodeOf(err) != codeOf(code) || !strings.Contains(err.Error(), string(code)) || !strings.Contains(err.Error(), says) {
		t.Errorf("got %v (%s), want %s with %s saying %q", err, api.CodeOf(err), codeOf(code), code, says)
	}
}

func asAPI(err error, e **api.Error) bool {
	var x *api.Error
	ok := err != nil && reflect.TypeOf(err) == reflect.TypeOf(x)
	if ok {
		*e = err.(*api.Error)
	}
	return ok
}

// lineDiff lists the lines only in a (-) or only in b (+).
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out.WriteString("- " + l + "\n")
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out.WriteString("+ " + l + "\n")
		}
	}
	return out.String()
}
