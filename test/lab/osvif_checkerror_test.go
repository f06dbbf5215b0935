//go:build linux

package lab_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// cutProxy forwards unix-socket connections to an OVSDB server until a client sends a
// transaction writing column: then it drops every connection and stops listening, so the
// database is away from then on for that client (the server itself keeps running).
type cutProxy struct {
	ln     net.Listener
	target string
	column []byte
	mu     sync.Mutex
	conns  []net.Conn
	cut    chan struct{}
	once   sync.Once
}

func startCutProxy(t *testing.T, sock, target, column string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, column: []byte(`"` + column + `"`), cut: make(chan struct{})}
	t.Cleanup(p.drop)
	go p.serve()
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("unix", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(c, s) }()
		go p.forward(c, s)
	}
}

// forward copies the client's requests to the server, and drops everything at the first
// transact naming the column (a JSON-RPC message this small arrives in one read on a unix
// socket).
func (p *cutProxy) forward(c, s net.Conn) {
	buf := make([]byte, 256<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if bytes.Contains(chunk, []byte(`"transact"`)) && bytes.Contains(chunk, p.column) {
				p.drop()
				return
			}
			if _, werr := s.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drop closes the listener and every connection, once.
func (p *cutProxy) drop() {
	p.once.Do(func() {
		p.ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
		close(p.cut)
	})
}

// TestOSVIFHidesCommandErrors shows what os-vif's check_error=False means on a compute node:
// with the native backend, os-vif creates a vhost-user port in one transaction, then sets its
// mtu_request in another; when OVSDB goes away between the two (here a proxy drops the
// connection at the MTU's transaction and refuses new ones), the plug still returns success —
// the port exists, mtu_request is unset, and the only trace is os-vif's log line "Error
// executing command (DbSetCommand): IGNORING". What the operator runs to notice (as
// docs/openstack.md says): vsctl find Interface external_ids:iface-id=<Neutron port> with the
// columns name, mtu_request and mtu, which shows mtu_request empty.
func TestOSVIFHidesCommandErrors(t *testing.T) {
	lab.Require(t, lab.NeedOVS, lab.NeedOSVIF)
	db := lab.StartOVSDB(t)
	db.StartOVSVswitchd(t, lab.OVSVswitchdSpec{Mode: lab.Dummy})
	db.Vsctl(t, "add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev")
	sock := filepath.Join(db.Dir, "proxy.sock")
	p := startCutProxy(t, sock, db.Sock, "mtu_request")

	v := lab.VIF{Kind: lab.VIFVhostUser, ID: "5b4a3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d", Address: "fa:16:3e:77:88:99",
		InstanceUUID: "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f", MTU: 9000, SocketPath: filepath.Join(db.Dir, "vhu.sock")}
	log, err := lab.OSVIFPlugWith(t.Context(), "unix:"+sock, v, lab.OSVIFOptions{Timeout: 3 * time.Second})
	select {
	case <-p.cut:
	default:
		t.Fatalf("os-vif never sent the MTU's transaction (plug error %v):\n%s", err, log)
	}
	if err != nil {
		t.Fatalf("os-vif's plug failed (%v); it was expected to hide the failed MTU step", err)
	}
	if !strings.Contains(log, "Error executing command (DbSetCommand): IGNORING") {
		t.Errorf("os-vif's log lacks the ignored DbSetCommand:\n%s", log)
	}
	// The port is there, without its MTU.
	if got := db.Get(t, "Interface", v.PortName(), "external_ids:iface-id"); got != v.ID {
		t.Errorf("Interface %s iface-id %q, want %q", v.PortName(), got, v.ID)
	}
	if got := db.Get(t, "Interface", v.PortName(), "mtu_request"); got != "[]" {
		t.Errorf("Interface %s mtu_request %q, want unset ([])", v.PortName(), got)
	}
	// How an operator sees it, with ovsplane's vsctl.
	vsctl := testkit.BuildOnce(t, "github.com/ovsplane/ovsplane/cmd/vsctl")
	out, err := exec.CommandContext(t.Context(), vsctl, "--db="+db.Endpoint, "--columns=name,mtu_request",
		"find", "Interface", "external_ids:iface-id="+v.ID).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if err != nil || !strings.Contains(string(out), v.PortName()) || !strings.Contains(string(out), "mtu_request         : []") {
		t.Errorf("vsctl find: %v\n%s", err, out)
	}
	t.Logf("vsctl --columns=name,mtu_request find Interface external_ids:iface-id=%s:\n%s", v.ID, out)
}
