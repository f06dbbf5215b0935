package replica

import (
	"bytes"
	"encoding/json/jsontext"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// genReply writes the monitor_cond reply of a switch with one bridge holding n ports made
// through the daemon's API, shaped like the design's §2.4 measurement: one internal
// interface per port, owner/generation/origin/spec tags on the port, owner/generation on the
// interface, the status columns ovs-vswitchd fills in, defaults omitted.
func genReply(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	id := func() string {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return UUID(b).String()
	}
	root, br := id(), id()
	ports, ifaces := make([]string, n), make([]string, n)
	for i := range ports {
		ports[i], ifaces[i] = id(), id()
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"Open_vSwitch":{%q:{"initial":{"bridges":["uuid",%q],"cur_cfg":812,"next_cfg":812,`+
		`"external_ids":["map",[["hostname","bench"],["rundir","/var/run/openvswitch"],["system-id",%q]]],`+
		`"ovs_version":"3.1.0","datapath_types":["set",["netdev","system"]],`+
		`"iface_types":["set",["afxdp","geneve","gre","internal","patch","system","tap","vxlan"]]}}},`, root, br, id())
	fmt.Fprintf(&b, `"Bridge":{%q:{"initial":{"name":"br0","datapath_type":"netdev","datapath_id":"0000b6a4f2c4e24b",`+
		`"external_ids":["map",[["ovsplane-generation","3"],["ovsplane-origin","api"],["ovsplane-owner","ovsplane"]]],"ports":["set",[`, br)
	for i, p := range ports {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `["uuid",%q]`, p)
	}
	b.WriteString(`]]}}},"Port":{`)
	for i, p := range ports {
		if i > 0 {
			b.WriteByte(',')
		}
		name := fmt.Sprintf("s%d", i)
		spec := fmt.Sprintf(`{\"bridge\":\"br0\",\"port\":{\"name\":\"%s\",\"interfaces\":[{\"name\":\"%s\",\"type\":\"internal\"}]}}`, name, name)
		fmt.Fprintf(&b, `%q:{"initial":{"name":%q,"interfaces":["uuid",%q],"external_ids":["map",[["ovsplane-generation","3"],`+
			`["ovsplane-origin","api"],["ovsplane-owner","ovsplane"],["ovsplane-spec","%s"]]]}}`, p, name, ifaces[i], spec)
	}
	b.WriteString(`},"Interface":{`)
	for i, u := range ifaces {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%q:{"initial":{"name":"s%d","type":"internal","external_ids":["map",[["ovsplane-generation","3"],["ovsplane-owner","ovsplane"]]],`+
			`"ofport":%d,"link_state":"up","admin_state":"up","mtu":1500,"mac_in_use":"aa:%02x:%02x:%02x:%02x:%02x"}}`,
			u, i, i+1, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()))
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestHeapPerPort loads 10,000 daemon-shaped ports and checks the live heap they cost against
// the design's measured 733 B per port plus 25 %. A size assertion, not a timing one.
func TestHeapPerPort(t *testing.T) {
	const n = 10000
	reply := genReply(n)
	s := newTestStore(t, Options{})
	before := liveHeap()
	d := jsontext.NewDecoder(bytes.NewReader(reply), jsontext.AllowDuplicateNames(true))
	p, err := s.ReadTableUpdates(d, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	d, p = nil, nil
	after := liveHeap()
	runtime.KeepAlive(reply)
	perPort := float64(after-before) / n
	t.Logf("live heap of %d ports: %d B, %.0f B per port", n, after-before, perPort)
	if s.Count("Port") != n || s.Count("Interface") != n {
		t.Fatalf("loaded %d ports, %d interfaces", s.Count("Port"), s.Count("Interface"))
	}
	if i, ok := s.Interface("s42"); !ok || *i.Ofport != 43 || *i.LinkState != "up" || i.ExternalIDs["ovsplane-owner"] != "ovsplane" {
		t.Fatalf("interface s42 = %+v", i)
	}
	const limit = 733 * 1.25
	if perPort > limit {
		t.Errorf("%.0f B per port exceeds %.0f B (733 B + 25 %%)", perPort, limit)
	}
	runtime.KeepAlive(s)
}
