package api_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/plugins/api"
)

func TestErrorf(t *testing.T) {
	base := errors.New("no such device")
	err := api.Errorf(api.NotFound, "vf 3 of %s: %w", "0000:3b:00.0", base)
	if err.Error() != "not_found: vf 3 of 0000:3b:00.0: no such device" {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, base) || !errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrInternal) {
		t.Errorf("errors.Is mismatch for %v", err)
	}
	wrapped := fmt.Errorf("attach vdpa0: %w", err)
	for _, tc := range []struct {
		err  error
		want api.Code
	}{
		{nil, api.OK},
		{wrapped, api.NotFound},
		{context.DeadlineExceeded, api.DeadlineExceeded},
		{fmt.Errorf("x: %w", context.Canceled), api.Canceled},
		{errors.New("plain"), api.Internal},
	} {
		if got := api.CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func problemFields(t *testing.T, err error) []string {
	t.Helper()
	var e *api.Error
	if err == nil {
		return nil
	}
	if !errors.As(err, &e) || e.Code != api.Internal {
		t.Fatalf("%v: want an internal *api.Error", err)
	}
	var fields []string
	for _, p := range e.Problems {
		fields = append(fields, p.Field)
	}
	return fields
}

func TestValidateAttachment(t *testing.T) {
	facts := api.HostFacts{IfaceTypes: []string{"dpdk", "internal", "system"}}
	bad, big, tag := 0, 70000, 5000
	a := api.Attachment{
		State: make([]byte, api.MaxStateSize+1),
		Ports: []api.OVSPort{
			{Name: "p0", Tag: &tag, Interfaces: []api.OVSInterface{{Name: "p0", Type: "vdpa"}, {Name: "p0", OfportRequest: &bad, MTURequest: &big}}},
			{Name: "p0", ExternalIDs: map[string]string{"ovsplane-owner": "me"}},
		},
	}
	got := problemFields(t, api.ValidateAttachment(facts, api.PortRequest{Bridge: "br0", Name: "p0"}, a))
	want := []string{"state", "ports[0].tag", "ports[0].interfaces[0].type", "ports[0].interfaces[1].name",
		"ports[0].interfaces[1].ofport_request", "ports[0].interfaces[1].mtu_request", "ports[1].name",
		"ports[1].external_ids", "ports[1].interfaces"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("problems on %v, want %v", got, want)
	}
	good := api.Attachment{Ports: []api.OVSPort{{Name: "p0", Interfaces: []api.OVSInterface{{Name: "p0", Type: "dpdk"}, {Name: "p1"}}}}}
	if err := api.ValidateAttachment(facts, api.PortRequest{}, good); err != nil {
		t.Errorf("valid attachment: %v", err)
	}
	if err := api.ValidateAttachment(facts, api.PortRequest{}, api.Attachment{}); err == nil {
		t.Error("an attachment without ports passed")
	}
}

func TestValidateFlowSet(t *testing.T) {
	cookies := api.CookieRange{Value: 0xab << 48, Mask: 0xffff << 48}
	groups := api.GroupRange{First: 100, Count: 10}
	fs := api.FlowSet{
		Flows: []api.Flow{
			{Cookie: cookies.Value | 7, Priority: 1, Actions: "drop"},
			{Cookie: 0, Priority: 2, Actions: "output:1"},
			{Cookie: 0x1, Priority: 3, Actions: " "},
			{Match: "cookie=0x1,in_port=1", Actions: "drop"},
		},
		Groups: []api.Group{
			{ID: 100, Type: "select", Buckets: []api.Bucket{{Actions: "output:1"}}},
			{ID: 100, Type: "random"},
			{ID: 110, Type: "all", Buckets: []api.Bucket{{}}},
		},
	}
	got := problemFields(t, api.ValidateFlowSet(cookies, groups, fs))
	want := []string{"flows[2].cookie", "flows[2].actions", "flows[3].match", "groups[1].id", "groups[1].type",
		"groups[2].id", "groups[2].buckets[0].actions"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("problems on %v, want %v", got, want)
	}
}

func TestValidateOthers(t *testing.T) {
	info := api.Info{Name: "Bad Name", Types: []api.ObjectType{
		{Name: "veth", Kind: api.ObjectKindPort, OptionsSchema: "{"}, {Name: "veth", Kind: api.ObjectKindJob}}}
	if got := problemFields(t, api.ValidateInfo(info)); strings.Join(got, " ") !=
		"name version types[0].kind types[0].options_schema types[1].name types[1].kind" {
		t.Errorf("ValidateInfo problems on %v", got)
	}
	batch := api.PortEventBatch{Events: []api.PortEvent{{Kind: api.EventAdded, Interface: "a"}, {Kind: api.EventRemoved, Interface: "b"}}}
	changes := []api.InterfaceChange{{Interface: "a", Set: map[string]string{"": "x"}}, {Interface: "b"}, {Interface: "c", Remove: []string{""}}}
	if got := problemFields(t, api.ValidateChanges(batch, changes)); strings.Join(got, " ") !=
		"changes[0].set changes[1].interface changes[2].interface changes[2].remove" {
		t.Errorf("ValidateChanges problems on %v", got)
	}
	statuses := []api.InterfaceChange{
		{Interface: "a", Status: &api.InterfaceStatus{Level: api.StatusWarning, Summary: "CPU copy: no DMA queue on NUMA 1", Details: map[string]string{"wq": "wq0.1"}}},
		{Interface: "a", Status: &api.InterfaceStatus{}},
		{Interface: "a", Status: &api.InterfaceStatus{Level: "fine", Summary: "x"}},
		{Interface: "a", Status: &api.InterfaceStatus{Level: api.StatusInfo}},
		{Interface: "a", Status: &api.InterfaceStatus{Level: api.StatusInfo, Summary: "two\nlines"}},
		{Interface: "a", Status: &api.InterfaceStatus{Level: api.StatusInfo, Summary: strings.Repeat("s", api.MaxStatusSummaryBytes+1)}},
		{Interface: "a", Status: &api.InterfaceStatus{Level: api.StatusInfo, Summary: "ok", Details: map[string]string{"wq": "a\x00"}}},
	}
	if got := problemFields(t, api.ValidateChanges(batch, statuses)); strings.Join(got, " ") !=
		"changes[2].status.level changes[3].status.summary changes[4].status.summary changes[5].status.summary changes[6].status.details.wq" {
		t.Errorf("ValidateChanges status problems on %v", got)
	}
	g := api.GlobalConfig{OtherConfig: map[string]string{"dpdk-extra": "-a x"}, DPDKExtra: []string{""}}
	if got := problemFields(t, api.ValidateGlobalConfig(g)); strings.Join(got, " ") != "other_config.dpdk-extra dpdk_extra[0]" {
		t.Errorf("ValidateGlobalConfig problems on %v", got)
	}
}

// The bridges and jobs of an attachment are checked by the host's own checks, so an author
// meets the rules in sdktest before the daemon refuses the port.
func TestValidateAttachmentBridgesAndJobs(t *testing.T) {
	facts := api.HostFacts{IfaceTypes: []string{"internal"}, DatapathTypes: []string{"netdev", "system"}}
	port := []api.OVSPort{{Name: "p0", Interfaces: []api.OVSInterface{{Name: "p0", Type: "internal"}}}}
	a := api.Attachment{Ports: port,
		Bridges: []api.OVSBridge{
			{Name: "br-x", DatapathType: "dummy"},
			{Name: "br-x", ExternalIDs: map[string]string{"ovsplane-object": "me"}},
			{Name: ""},
		},
		Jobs: []api.Job{
			{Name: "j1", Type: "tick", Config: []byte(`{}`)},
			{Name: "j1", Type: "tick", Config: []byte(`{}`)},
			{Name: "bad name", Type: "tick", Config: []byte(`{}`)},
			{Name: "j3", Type: "tick", Config: []byte(`[1]`)},
		},
	}
	got := problemFields(t, api.ValidateAttachment(facts, api.PortRequest{Bridge: "br0", Name: "p0"}, a))
	want := []string{"bridges[0].datapath_type", "bridges[1].name", "bridges[1].external_ids", "bridges[2].name",
		"jobs[1].name", "jobs[2]", "jobs[3]"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("problems on %v, want %v", got, want)
	}
	many := api.Attachment{Ports: port}
	for i := range 9 {
		many.Jobs = append(many.Jobs, api.Job{Name: fmt.Sprintf("j%d", i), Type: "tick", Config: []byte(`{}`)})
	}
	if got := problemFields(t, api.ValidateAttachment(facts, api.PortRequest{}, many)); strings.Join(got, " ") != "jobs" {
		t.Errorf("nine jobs: problems on %v", got)
	}
	good := api.Attachment{Ports: port, Bridges: []api.OVSBridge{{Name: "br-tun", DatapathType: "netdev", Protocols: []string{"OpenFlow13"}}},
		Jobs: []api.Job{{Name: "route-agent", Type: "tick", Config: []byte(`{"every":"1s"}`)}}}
	if err := api.ValidateAttachment(facts, api.PortRequest{}, good); err != nil {
		t.Errorf("valid attachment: %v", err)
	}
}
