//go:build linux

package lab_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// TestOSVIFPlug plugs a vhost-user port and a plain port with os-vif's OVS plugin (the code Nova
// runs on a compute node) into a private ovsdb-server with a DPDK ovs-vswitchd, checks the rows
// os-vif wrote, then unplugs both.
func TestOSVIFPlug(t *testing.T) {
	t.Parallel()
	lab.Require(t, lab.NeedOSVIF, lab.NeedDPDK)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.DPDK})
	ctx := t.Context()

	const instance = "0b0e5f7e-3c1d-4d8e-9b1a-2f6c7d8e9f01"
	vhu := lab.VIF{Kind: lab.VIFVhostUser, ID: "8c1b2e3f-4a5b-4c6d-8e7f-901234567890",
		Address: "fa:16:3e:11:22:33", InstanceUUID: instance, MTU: 9000,
		SocketPath: filepath.Join(db.Dir, "vhu-vm1.sock")}
	tap := lab.VIF{Kind: lab.VIFOpenVSwitch, ID: "1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
		Address: "fa:16:3e:44:55:66", InstanceUUID: instance, DatapathType: "netdev"}
	if got := vhu.PortName(); got != "vhu8c1b2e3f-4a" {
		t.Fatalf("vhost-user PortName = %q, want os-vif's vhu8c1b2e3f-4a", got)
	}
	for _, v := range []lab.VIF{vhu, tap} {
		if err := lab.OSVIFPlug(ctx, db.Endpoint, v); err != nil {
			t.Fatal(err)
		}
	}

	if got := db.Get(t, "Bridge", "br-int", "datapath_type"); got != "netdev" {
		t.Errorf("Bridge br-int datapath_type = %q, want netdev (os-vif's vhost-user default)", got)
	}
	for _, v := range []lab.VIF{vhu, tap} {
		name := v.PortName()
		if got := db.Vsctl(t, "port-to-br", name); got != "br-int" {
			t.Errorf("port %s is on bridge %q, want br-int", name, got)
		}
		want := map[string]string{"iface-id": v.ID, "iface-status": "active",
			"attached-mac": v.Address, "vm-uuid": v.InstanceUUID}
		for k, w := range want {
			if got := db.Get(t, "Interface", name, "external_ids:"+k); got != w {
				t.Errorf("Interface %s external_ids:%s = %q, want %q", name, k, got, w)
			}
		}
	}
	if got := db.Get(t, "Interface", vhu.PortName(), "type"); got != "dpdkvhostuserclient" {
		t.Errorf("Interface %s type = %q, want dpdkvhostuserclient", vhu.PortName(), got)
	}
	if got := db.Get(t, "Interface", vhu.PortName(), "options:vhost-server-path"); got != vhu.SocketPath {
		t.Errorf("Interface %s options:vhost-server-path = %q, want %q", vhu.PortName(), got, vhu.SocketPath)
	}
	if got := db.Get(t, "Interface", vhu.PortName(), "mtu_request"); got != "9000" {
		t.Errorf("Interface %s mtu_request = %q, want 9000", vhu.PortName(), got)
	}
	// The DPDK vswitchd accepts the port: an OpenFlow port number and no error, although no
	// QEMU listens on the socket yet (the client reconnects).
	if of, err := strconv.Atoi(db.Get(t, "Interface", vhu.PortName(), "ofport")); err != nil || of < 1 {
		t.Errorf("Interface %s ofport = %d (%v), want > 0", vhu.PortName(), of, err)
	}
	if got := db.Get(t, "Interface", vhu.PortName(), "error"); got != "[]" {
		t.Errorf("Interface %s error = %q, want none", vhu.PortName(), got)
	}
	if got := db.Get(t, "Interface", tap.PortName(), "type"); got != `""` && got != "" {
		t.Errorf("Interface %s type = %q, want empty (a system netdev)", tap.PortName(), got)
	}

	for _, v := range []lab.VIF{vhu, tap} {
		if err := lab.OSVIFUnplug(ctx, db.Endpoint, v); err != nil {
			t.Fatal(err)
		}
		if got := db.Vsctl(t, "--columns=name", "find", "Interface", "name="+v.PortName()); got != "" {
			t.Errorf("after unplug, Interface %s still exists: %s", v.PortName(), got)
		}
	}
	// Unplugging again is not an error (os-vif's del-port uses if_exists).
	if err := lab.OSVIFUnplug(ctx, db.Endpoint, vhu); err != nil {
		t.Errorf("second unplug: %v", err)
	}
}

// TestOSVIFPlugRejectsBadInput checks that OSVIFPlug refuses invalid VIFs and endpoints before
// running anything, naming the field.
func TestOSVIFPlugRejectsBadInput(t *testing.T) {
	t.Parallel()
	good := lab.VIF{Kind: lab.VIFVhostUser, ID: "8c1b2e3f-4a5b-4c6d-8e7f-901234567890",
		Address: "fa:16:3e:11:22:33", InstanceUUID: "0b0e5f7e-3c1d-4d8e-9b1a-2f6c7d8e9f01",
		SocketPath: "/tmp/x.sock"}
	cases := []struct {
		name     string
		endpoint string
		mutate   func(v *lab.VIF)
		want     string
	}{
		{"kind", "unix:/tmp/db.sock", func(v *lab.VIF) { v.Kind = "vdpa" }, "Kind"},
		{"id", "unix:/tmp/db.sock", func(v *lab.VIF) { v.ID = "port1; rm -rf /" }, "ID"},
		{"mac", "unix:/tmp/db.sock", func(v *lab.VIF) { v.Address = "FA:16:3E:11:22:33" }, "Address"},
		{"instance", "unix:/tmp/db.sock", func(v *lab.VIF) { v.InstanceUUID = "" }, "InstanceUUID"},
		{"bridge", "unix:/tmp/db.sock", func(v *lab.VIF) { v.Bridge = "a-bridge-name-too-long" }, "Bridge"},
		{"socket", "unix:/tmp/db.sock", func(v *lab.VIF) { v.SocketPath = "/" + strings.Repeat("s", 200) }, "SocketPath"},
		{"relative socket", "unix:/tmp/db.sock", func(v *lab.VIF) { v.SocketPath = "x.sock" }, "SocketPath"},
		{"mode", "unix:/tmp/db.sock", func(v *lab.VIF) { v.VhostMode = "both" }, "VhostMode"},
		{"mtu", "unix:/tmp/db.sock", func(v *lab.VIF) { v.MTU = 70000 }, "MTU"},
		{"plain with socket", "unix:/tmp/db.sock", func(v *lab.VIF) { v.Kind = lab.VIFOpenVSwitch }, "apply to Kind"},
		{"endpoint", "ssl:1.2.3.4:6640", func(*lab.VIF) {}, "endpoint"},
	}
	for _, c := range cases {
		v := good
		c.mutate(&v)
		err := lab.OSVIFPlug(t.Context(), c.endpoint, v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: OSVIFPlug error = %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// TestOSVIFOptionsRejected checks that OSVIFPlugWith refuses invalid options before running
// anything, naming the field.
func TestOSVIFOptionsRejected(t *testing.T) {
	t.Parallel()
	v := lab.VIF{Kind: lab.VIFOpenVSwitch, ID: "8c1b2e3f-4a5b-4c6d-8e7f-901234567890",
		Address: "fa:16:3e:11:22:33", InstanceUUID: "0b0e5f7e-3c1d-4d8e-9b1a-2f6c7d8e9f01"}
	for _, c := range []struct {
		o    lab.OSVIFOptions
		want string
	}{
		{lab.OSVIFOptions{Backend: "ovs-vsctl"}, "Backend"},
		{lab.OSVIFOptions{Timeout: 1500 * time.Millisecond}, "Timeout"},
		{lab.OSVIFOptions{Timeout: time.Hour}, "Timeout"},
		{lab.OSVIFOptions{Backend: lab.OSVIFVsctl, VsctlDir: "bin"}, "VsctlDir"},
		{lab.OSVIFOptions{Backend: lab.OSVIFVsctl, VsctlDir: "/a:/b"}, "VsctlDir"},
	} {
		if _, err := lab.OSVIFPlugWith(t.Context(), "unix:/tmp/db.sock", v, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("options %+v: error %v, want one naming %s", c.o, err, c.want)
		}
	}
}
