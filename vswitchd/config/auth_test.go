package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A tcp: API listener without a client CA was accepted, and any client could then write
// (issue 12 item 4): the CA is required now, by name.
func TestTCPListenerNeedsClientCA(t *testing.T) {
	_, err := load(t, "api:\n  listen: [\"tcp:127.0.0.1:9470\"]\n  tls:\n    certificate: /c.pem\n    private_key: /k.pem\n", nil)
	if err == nil || !slices.Contains(problems(err), "api.tls.ca_cert: required by a tcp: listener") {
		t.Fatalf("tcp: listener without api.tls.ca_cert: %v, want api.tls.ca_cert required", err)
	}
}

func TestAuthKeys(t *testing.T) {
	doc := `
api:
  auth:
    admins:
      uids: [1000]
      groups: [netadmin]
      subjects: ["ops-*", "spiffe://example.org/ops/*"]
    readers:
      gids: [4242, 4243]
`
	c := mustLoad(t, doc, []string{"OVSPLANE_API_AUTH_READERS_UIDS=1001,1002"}, "--api-auth-admins-gids=10")
	want := Auth{
		Admins:  Principals{UIDs: []int{1000}, GIDs: []int{10}, Groups: []string{"netadmin"}, Subjects: []string{"ops-*", "spiffe://example.org/ops/*"}},
		Readers: Principals{UIDs: []int{1001, 1002}, GIDs: []int{4242, 4243}},
	}
	if !reflect.DeepEqual(c.API.Auth, want) {
		t.Errorf("api.auth:\n got %+v\nwant %+v", c.API.Auth, want)
	}
	if c := mustLoad(t, "api:\n  auth:\n    admins:\n      uids: []\n", nil); !reflect.DeepEqual(c.API.Auth, Auth{}) {
		t.Errorf("empty lists: %+v, want the zero Auth", c.API.Auth)
	}
	for _, tc := range []struct{ doc, want string }{
		{"api:\n  auth:\n    admins:\n      uids: [-1]\n", "api.auth.admins.uids[0]: -1 is not a uid"},
		{"api:\n  auth:\n    readers:\n      gids: [4294967295]\n", "api.auth.readers.gids[0]: 4294967295 is not a gid"},
		{"api:\n  auth:\n    readers:\n      groups: [\"100\"]\n", "api.auth.readers.groups[0]: \"100\" is a number: list group ids under api.auth.readers.gids"},
		{"api:\n  auth:\n    admins:\n      subjects: [\"ops-[\"]\n", "api.auth.admins.subjects[0]: \"ops-[\" is not a pattern"},
		{"api:\n  auth:\n    admin:\n      uids: [1]\n", "api.auth.admin: unknown key (known keys: admins, readers)"},
	} {
		_, err := load(t, tc.doc, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// Go's profiles were served on the metrics address whatever it was (issue 12 item 4): they are
// off by default, and on a non-loopback address they need metrics.pprof_any_address.
func TestPprofSettings(t *testing.T) {
	if c := mustLoad(t, "metrics:\n  address: 0.0.0.0:9476\n", nil); c.Metrics.PProf {
		t.Error("metrics.pprof is on by default")
	}
	if c := mustLoad(t, "metrics:\n  address: 127.0.0.1:9476\n  pprof: true\n", nil); !c.Metrics.PProf {
		t.Error("metrics.pprof: true did not load")
	}
	mustLoad(t, "metrics:\n  address: '[::1]:9476'\n", nil, "--metrics-pprof=true")
	for _, addr := range []string{"0.0.0.0:9476", ":9476", "10.1.2.3:9476"} {
		_, err := load(t, "metrics:\n  address: \""+addr+"\"\n  pprof: true\n", nil)
		if err == nil || !strings.Contains(err.Error(), "metrics.pprof: metrics.address \""+addr+"\" is not a loopback address") ||
			!strings.Contains(err.Error(), "metrics.pprof_any_address") {
			t.Errorf("pprof on %s: %v, want refused naming metrics.pprof_any_address", addr, err)
		}
		c := mustLoad(t, "metrics:\n  address: \""+addr+"\"\n  pprof: true\n", []string{"OVSPLANE_METRICS_PPROF_ANY_ADDRESS=true"})
		if !c.Metrics.PProf || !c.Metrics.PProfAnyAddress {
			t.Errorf("pprof on %s with pprof_any_address: %+v", addr, c.Metrics)
		}
	}
	if _, err := load(t, "metrics:\n  pprof: true\n", nil); err == nil || !strings.Contains(err.Error(), "metrics.pprof: needs metrics.address") {
		t.Errorf("pprof without an address: %v", err)
	}
}
