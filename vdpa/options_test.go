package vdpa_test

import (
	"errors"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
)

// TestRequestFromOptionsNamesTheOption: every INVALID_REQUEST from the options names the option
// key at fault in Error.Field (the plugin turns it into a problem on options.<key>), including
// the ones only Normalize can see.
func TestRequestFromOptionsNamesTheOption(t *testing.T) {
	pf := map[string]string{"pf": pf0}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"pf": pf0}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name  string
		opts  map[string]string
		field string
	}{
		{"vm1", map[string]string{"vf": "1"}, "pf"},
		{"vm1", with("vf", "two"), "vf"},
		{"vm1", with("vf", "-1"), "vf"},
		{"vm1", with("mac", "02:00"), "mac"},
		{"vm1", with("mac", "01:00:00:00:00:01"), "mac"},
		{"vm1", with("mtu", "20"), "mtu"},
		{"vm1", with("mtu", "big"), "mtu"},
		{"vm1", with("max-vqp", "-2"), "max-vqp"},
		{"vm1", with("mode", "magic"), "mode"},
		{"vm1", with("vf", "4", "num-vfs", "2"), "num-vfs"},
		{"vm1", with("eswitch", "legacy"), "eswitch"},
		{"vm1", with("bus-driver", "vfio"), "bus-driver"},
		{"vm1", with("mode", "dpdk-pmd", "bus-driver", "vhost_vdpa"), "bus-driver"},
		{"vm1", with("mode", "dpdk-pmd", "socket-dir", "run/x"), "socket-dir"},
		{"vm1", with("adopt", "perhaps"), "adopt"},
		{"vm1", with("hw-offload", "yes please"), "hw-offload"},
		{"vm1", with("max_vqp", "4"), "max_vqp"},
		{"bad name!", pf, "name"},
	}
	for _, c := range cases {
		_, err := vdpa.RequestFromOptions(c.name, c.opts)
		var e *vdpa.Error
		if !errors.As(err, &e) || e.Code != vdpa.CodeInvalidRequest || e.Field != c.field {
			t.Errorf("%s %v: got %#v, want INVALID_REQUEST on %q", c.name, c.opts, err, c.field)
		}
	}
}
