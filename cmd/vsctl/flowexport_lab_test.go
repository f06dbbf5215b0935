package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/test/lab"
)

// exportDaemon is a real ovsplaned whose config file gives bridge br0 (two dummy ports) a
// NetFlow export, on a lab OVSDB with a dummy ovs-vswitchd.
type exportDaemon struct {
	db   *lab.OVSDB
	vs   *lab.OVSVswitchd
	dir  string
	conf string
	sock string
	proc *testkit.Proc
}

func (d *exportDaemon) start(t *testing.T) {
	t.Helper()
	d.proc = testkit.Start(t, exec.Command(testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/ovsplaned"),
		"--config", d.conf, "--data-dir", d.dir, "--ovsdb-endpoints", d.db.Endpoint, "--log-level", "info"))
	proc := d.proc
	t.Cleanup(func() {
		proc.Kill()
		if t.Failed() {
			t.Logf("ovsplaned log (tail):\n%s", proc.Out.Tail(4000))
		}
	})
}

// status returns the daemon's status of key ("netflow/br0"): state and error, "" when absent.
func (d *exportDaemon) status(t *testing.T, key string) (state, errText string) {
	t.Helper()
	a := (&pluginDaemon{sock: d.sock}).api(t, "ListStatus", `{}`)
	if !a.ok() {
		return "", "api: " + a.body
	}
	var resp struct {
		Statuses []struct {
			Key   string `json:"key"`
			State string `json:"state"`
			Error string `json:"error"`
		} `json:"statuses"`
	}
	if err := json.Unmarshal([]byte(a.body), &resp); err != nil {
		return "", err.Error()
	}
	for _, s := range resp.Statuses {
		if s.Key == key {
			return s.State, s.Error
		}
	}
	return "", ""
}

// waitStatus waits until key has state (STATE_READY, STATE_ERROR…) and returns its error text.
func (d *exportDaemon) waitStatus(t *testing.T, key, state string) string {
	t.Helper()
	var got, text string
	testkit.EventuallyTrue(t, 90*time.Second, 50*time.Millisecond, key+" "+state, func() bool {
		if d.proc.Exited() {
			t.Fatalf("ovsplaned exited:\n%s", d.proc.Out.Tail(4000))
		}
		got, text = d.status(t, key)
		return got == state
	})
	return text
}

// datagramFrom sends traffic through br0 (a packet received on dummy port p1 from 10.0.0.SRC,
// then a datapath flow purge, which expires the flow) until sock receives a NetFlow v5
// datagram holding that flow's record; it returns the datagram's engine type and id.
func datagramFrom(t *testing.T, vs *lab.OVSVswitchd, sock *net.UDPConn, src int) (engineType, engineID byte) {
	t.Helper()
	pkt := fmt.Sprintf("eth(src=50:54:00:00:00:%02x,dst=50:54:00:00:00:02),eth_type(0x0800),"+
		"ipv4(src=10.0.0.%d,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1234,dst=5678)", src, src)
	want := net.IPv4(10, 0, 0, byte(src)).To4()
	buf := make([]byte, 65536)
	found := false
	testkit.EventuallyTrue(t, 90*time.Second, 10*time.Millisecond, fmt.Sprintf("a NetFlow v5 record from 10.0.0.%d", src), func() bool {
		vs.Appctl(t, "netdev-dummy/receive", "p1", pkt)
		vs.Appctl(t, "revalidator/purge")
		_ = sock.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			n, _, err := sock.ReadFromUDP(buf)
			if err != nil {
				return false
			}
			b := buf[:n]
			if n < 24 || binary.BigEndian.Uint16(b) != 5 {
				t.Fatalf("datagram of %d bytes is not NetFlow v5: % x", n, b[:min(n, 24)])
			}
			count := int(binary.BigEndian.Uint16(b[2:]))
			if n != 24+48*count {
				t.Fatalf("NetFlow v5 datagram of %d bytes for %d records", n, count)
			}
			for i := range count {
				if net.IP(b[24+48*i : 28+48*i]).Equal(want) {
					engineType, engineID, found = b[20], b[21], true
					return true
				}
			}
		}
	})
	if !found {
		t.Fatal("no record")
	}
	return engineType, engineID
}

func udpSocket(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFlowExportEndToEnd (issue 18): flow export as the daemon's managed object and through
// vsctl's ovs-vsctl syntax, each step with the real binaries (ovsplaned, vsctl) on a real
// ovsdb-server and ovs-vswitchd (dummy datapath):
//   - the config file's netflow on br0 becomes an owned NetFlow row; ovs-vswitchd sends NetFlow
//     v5 datagrams with the configured engine ids to a UDP socket of the test;
//   - kill -9 of ovsplaned and a restart rewrite nothing (same row, same generation);
//   - an IPFIX setting applied through the API is in GetBridge and becomes an owned IPFIX row;
//   - vsctl's `-- set Bridge br0 netflow=@nf -- --id=@nf create NetFlow targets=…` replaces the
//     setting with a row of its own: ovs-vswitchd exports to that target, the daemon leaves
//     the foreign row alone and reports netflow/br0 in error saying how to release it; once
//     vsctl clears it, the daemon's own row comes back;
//   - the API's bridge keeps its IPFIX across another kill -9, rewriting nothing.
func TestFlowExportEndToEnd(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	if _, err := os.Stat(strings.TrimPrefix(model.DefaultAPIAddr(), "unix:")); err == nil {
		t.Fatalf("an ovsplaned socket exists at %s: stop that daemon (vsctl would find it by default)", model.DefaultAPIAddr())
	}
	bin := buildVsctl(t)
	d := &exportDaemon{db: lab.StartOVSDB(t), dir: testkit.ShortTempDir(t, "vfe-")}
	d.vs = d.db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	d.conf = filepath.Join(d.dir, "ovsplaned.yaml")
	d.sock = filepath.Join(d.dir, model.SocketName)
	ours, theirs := udpSocket(t), udpSocket(t)
	if err := os.WriteFile(d.conf, fmt.Appendf(nil, `
bridges:
  - name: br0
    fail_mode: standalone
    netflow:
      targets: ["%s"]
      active_timeout: 30
      engine_type: 7
      engine_id: 9
    ports:
      - {name: p1, interfaces: [{name: p1, ofport_request: 1}]}
      - {name: p2, interfaces: [{name: p2, ofport_request: 2}]}
`, ours.LocalAddr()), 0o644); err != nil {
		t.Fatal(err)
	}
	d.start(t)
	d.waitStatus(t, "netflow/br0", "STATE_READY")
	d.waitStatus(t, "interface/p1", "STATE_READY")
	if et, ei := datagramFrom(t, d.vs, ours, 1); et != 7 || ei != 9 {
		t.Errorf("engine type/id %d/%d, want 7/9", et, ei)
	}
	nfUUID := strings.Trim(d.db.Get(t, "Bridge", "br0", "netflow"), "[]")
	nfExt := d.db.Get(t, "NetFlow", nfUUID, "external_ids")
	brExt := d.db.Get(t, "Bridge", "br0", "external_ids")
	if !strings.Contains(nfExt, ovsdb.OwnerKey+"=ovsplane") {
		t.Fatalf("NetFlow row %s: external_ids %s, want ovsplane's tag", nfUUID, nfExt)
	}

	// kill -9, restart: nothing rewritten.
	d.proc.Kill()
	d.start(t)
	d.waitStatus(t, "netflow/br0", "STATE_READY")
	d.waitStatus(t, "interface/p2", "STATE_READY")
	if u, e := strings.Trim(d.db.Get(t, "Bridge", "br0", "netflow"), "[]"), d.db.Get(t, "NetFlow", nfUUID, "external_ids"); u != nfUUID || e != nfExt {
		t.Errorf("after kill -9 and restart: netflow %s %s, want unchanged %s %s", u, e, nfUUID, nfExt)
	}
	if e := d.db.Get(t, "Bridge", "br0", "external_ids"); e != brExt {
		t.Errorf("after kill -9 and restart: bridge external_ids %s, want unchanged %s", e, brExt)
	}

	// Through the API: a bridge with IPFIX sampling.
	api := &pluginDaemon{sock: d.sock}
	if a := api.api(t, "ApplyBridge", `{"bridge":{"name":"br9","ipfix":{"targets":["127.0.0.1:4739"],"sampling":"64","otherConfig":{"enable-tunnel-sampling":"true"}}}}`); !a.ok() {
		t.Fatalf("ApplyBridge: %d %s", a.status, a.body)
	}
	var got struct {
		Bridge struct {
			Spec struct {
				IPFIX struct {
					Targets     []string          `json:"targets"`
					Sampling    string            `json:"sampling"`
					OtherConfig map[string]string `json:"otherConfig"`
				} `json:"ipfix"`
			} `json:"spec"`
		} `json:"bridge"`
	}
	a := api.api(t, "GetBridge", `{"name":"br9"}`)
	if err := json.Unmarshal([]byte(a.body), &got); !a.ok() || err != nil {
		t.Fatalf("GetBridge br9: %d %s (%v)", a.status, a.body, err)
	}
	if x := got.Bridge.Spec.IPFIX; strings.Join(x.Targets, ",") != "127.0.0.1:4739" || x.Sampling != "64" || x.OtherConfig["enable-tunnel-sampling"] != "true" {
		t.Errorf("GetBridge br9's ipfix %+v, want what was applied", x)
	}
	d.waitStatus(t, "ipfix/br9", "STATE_READY")
	ipfix := strings.Trim(d.db.Get(t, "Bridge", "br9", "ipfix"), "[]")
	if got := d.db.Get(t, "IPFIX", ipfix, "sampling"); got != "64" {
		t.Errorf("br9's IPFIX sampling %s, want 64", got)
	}
	if a := api.api(t, "ApplyBridge", `{"bridge":{"name":"br9","ipfix":{"targets":["nowhere:4739"]}}}`); a.status != 400 || !strings.Contains(a.body, "ipfix.targets[0]") {
		t.Errorf("ApplyBridge with a bad target: %d %s, want 400 naming ipfix.targets[0]", a.status, a.body)
	}

	// vsctl, ovs-vsctl's syntax, straight to OVSDB: a NetFlow of its own on br0.
	dbArg := "--db=" + d.db.Endpoint
	target := theirs.LocalAddr().String()
	if code, _, stderr := vsctlRun(t, bin, dbArg, "--", "set", "Bridge", "br0", "netflow=@nf", "--",
		"--id=@nf", "create", "NetFlow", `targets="`+target+`"`, "active_timeout=30"); code != 0 {
		t.Fatalf("vsctl set Bridge br0 netflow=@nf: exit %d: %s", code, stderr)
	}
	msg := d.waitStatus(t, "netflow/br0", "STATE_ERROR")
	if !strings.Contains(msg, "did not create") || !strings.Contains(msg, "ovs-vsctl clear Bridge br0 netflow") {
		t.Errorf("netflow/br0 error %q, want the foreign row and how to release it", msg)
	}
	if _, ei := datagramFrom(t, d.vs, theirs, 3); ei == 9 {
		t.Errorf("foreign NetFlow's datagrams carry the daemon's engine id 9")
	}
	foreign := strings.Trim(d.db.Get(t, "Bridge", "br0", "netflow"), "[]")
	if ext := d.db.Get(t, "NetFlow", foreign, "external_ids"); strings.Contains(ext, ovsdb.OwnerKey) || foreign == nfUUID {
		t.Errorf("br0's netflow %s (external_ids %s) is not vsctl's row", foreign, ext)
	}
	if got := d.db.Get(t, "NetFlow", foreign, "targets"); got != `["`+target+`"]` {
		t.Errorf("the daemon changed the foreign row's targets to %s", got)
	}

	// Released: the daemon's own row comes back.
	if code, _, stderr := vsctlRun(t, bin, dbArg, "clear", "Bridge", "br0", "netflow"); code != 0 {
		t.Fatalf("vsctl clear Bridge br0 netflow: exit %d: %s", code, stderr)
	}
	d.waitStatus(t, "netflow/br0", "STATE_READY")
	if et, ei := datagramFrom(t, d.vs, ours, 4); et != 7 || ei != 9 {
		t.Errorf("after the release: engine type/id %d/%d, want 7/9", et, ei)
	}

	// The API's bridge keeps its export across another kill -9: the daemon reads it back
	// from OVSDB (the spec it stores with the bridge) and rewrites nothing.
	ipfixExt := d.db.Get(t, "IPFIX", ipfix, "external_ids")
	d.proc.Kill()
	d.start(t)
	d.waitStatus(t, "ipfix/br9", "STATE_READY")
	a = api.api(t, "GetBridge", `{"name":"br9"}`)
	got.Bridge.Spec.IPFIX.Sampling = ""
	if err := json.Unmarshal([]byte(a.body), &got); !a.ok() || err != nil || got.Bridge.Spec.IPFIX.Sampling != "64" {
		t.Errorf("GetBridge br9 after a restart: %d %s (%v), want its ipfix", a.status, a.body, err)
	}
	if u, e := strings.Trim(d.db.Get(t, "Bridge", "br9", "ipfix"), "[]"), d.db.Get(t, "IPFIX", ipfix, "external_ids"); u != ipfix || e != ipfixExt {
		t.Errorf("br9's IPFIX after a restart: %s %s, want unchanged %s %s", u, e, ipfix, ipfixExt)
	}
}
