//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// transparentJobConfig is jobConfig with the transparent mode towards the peer: tun device
// stp0 with address addr, offloads on or off.
func transparentJobConfig(self, peer int, ns string, links []string, addr string, offloads bool) string {
	var ls []string
	for _, l := range links {
		ls = append(ls, fmt.Sprintf("{interface: %s, capacity_mbit: 1000}", l))
	}
	return fmt.Sprintf("{node: %d, netns: %s, links: [%s], peers: [{node: %d, transparent: {device: stp0, address: %q, offloads: %t}}], policy: round-robin}",
		self, ns, strings.Join(ls, ", "), peer, addr, offloads)
}

// TestDaemonRunsTransparentJobs runs the real ovsplaned with the real stripe plugin and two
// stripe jobs with the transparent mode, node 1 (tun offloads on) and node 2 (off), each in its
// own namespace, joined by two veth pairs. The jobs create their tun devices; an ordinary TCP
// connection from node 1's tun address to node 2's carries 4 MiB intact and 1 MiB back, and
// `vsctl plugin stats stripe` shows both devices running with the packets they carried.
func TestDaemonRunsTransparentJobs(t *testing.T) {
	a, b := lab.NewNetns(t), lab.NewNetns(t)
	var linksA, linksB []string
	for range 2 {
		p := lab.NewVethPair(t, lab.VethSpec{ANetns: a, BNetns: b})
		linksA, linksB = append(linksA, p.A.Name), append(linksB, p.B.Name)
	}
	db := lab.StartOVSDB(t)
	dir := testkit.ShortTempDir(t, "stripetun-")
	pluginDir := filepath.Join(dir, "plugins")
	sum := testkit.InstallPlugin(t, ".", pluginDir, "ovsplane-plugin-stripe")
	conf := filepath.Join(dir, "ovsplaned.yaml")
	yaml := fmt.Sprintf(`
plugin_dir: %s
plugins:
  - name: stripe
    path: ovsplane-plugin-stripe
    sha256: %s
    jobs:
      - name: node1
        type: stripe
        config: %s
      - name: node2
        type: stripe
        config: %s
`, pluginDir, sum, transparentJobConfig(1, 2, a.Name, linksA, "10.99.0.1/30", true),
		transparentJobConfig(2, 1, b.Name, linksB, "10.99.0.2/30", false))
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := testkit.Start(t, exec.Command(testkit.BuildOnce(t, ovsplanedPkg), "--config", conf, "--data-dir", dir,
		"--ovsdb-endpoints", db.Endpoint, "--log-level", "info"))
	t.Cleanup(func() {
		daemon.Kill()
		if t.Failed() {
			t.Logf("ovsplaned log (tail):\n%s", daemon.Out.Tail(6000))
		}
	})
	sock := "unix:" + filepath.Join(dir, "ovsplaned.sock")
	stats := func(ctx context.Context) ([]statsRow, error) {
		var out, errOut bytes.Buffer
		rc := daemoncmd.Main(ctx, daemoncmd.Env{Args: []string{"vsctl", "--daemon", sock, "--format", "json", "plugin", "stats", "stripe"},
			Stdout: &out, Stderr: &errOut})
		if rc != 0 && out.Len() == 0 {
			return nil, fmt.Errorf("vsctl plugin stats stripe: exit %d: %s", rc, errOut.String())
		}
		var rows []statsRow
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			return nil, fmt.Errorf("vsctl plugin stats stripe: %v: %s", err, out.String())
		}
		return rows, nil
	}
	peerOf := map[string]string{"node1": "2", "node2": "1"}
	lab.WaitFor(t, time.Minute, "both jobs running with their tun devices and knowing their peer", func(ctx context.Context) error {
		if daemon.Exited() {
			t.Fatalf("ovsplaned exited:\n%s", daemon.Out.Tail(4000))
		}
		rows, err := stats(ctx)
		if err != nil {
			return err
		}
		if len(rows) != 2 {
			return fmt.Errorf("%d jobs", len(rows))
		}
		for _, r := range rows {
			peer := peerOf[r.Name]
			if r.State != "running" {
				return fmt.Errorf("job %s: %s", r.Name, r.State)
			}
			if v, ok := r.value("stripe_tunnel_running", map[string]string{"peer": peer, "device": "stp0"}); !ok || v != 1 {
				return fmt.Errorf("job %s: tunnel not running (%v, %t)", r.Name, v, ok)
			}
			if v, ok := r.value("stripe_peer_known", map[string]string{"peer": peer}); !ok || v != 1 {
				return fmt.Errorf("job %s: peer %s not known yet", r.Name, peer)
			}
		}
		return nil
	})

	// An ordinary TCP connection between the tun addresses, in the jobs' namespaces.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := tcpThrough(ctx, a, b, "10.99.0.2", 4<<20); err != nil {
		t.Fatalf("TCP from 10.99.0.1 to 10.99.0.2 through the jobs' tun devices: %v", err)
	}
	// The daemon samples the jobs' stats periodically: wait (bounded) for a sample taken after
	// the transfer.
	lab.WaitFor(t, time.Minute, "the tunnels' counters showing the transfer", func(ctx context.Context) error {
		rows, err := stats(ctx)
		if err != nil {
			return err
		}
		for _, r := range rows {
			l := map[string]string{"peer": peerOf[r.Name], "device": "stp0"}
			tx, _ := r.value("stripe_tunnel_tx_packets", l)
			rx, _ := r.value("stripe_tunnel_rx_packets", l)
			// 5 MiB in segments of at most 1444 bytes: some 3 600 packets one way or the other.
			if tx+rx < 3000 {
				return fmt.Errorf("job %s: tunnel sent %v and received %v packets, want the transfer's", r.Name, tx, rx)
			}
			if d, ok := r.value("stripe_tunnel_dropped", l); !ok || d != 0 {
				t.Fatalf("job %s: tunnel dropped %v packets (%t), want 0", r.Name, d, ok)
			}
		}
		return nil
	})
}

// tcpThrough sends n bytes over one TCP connection from ns src to a listener at dstIP in ns
// dst and n/4 bytes back, and checks both arrive intact.
func tcpThrough(ctx context.Context, src, dst *lab.Netns, dstIP string, n int) error {
	var ln net.Listener
	if err := dst.Do(func() (err error) { ln, err = net.Listen("tcp", dstIP+":0"); return err }); err != nil {
		return err
	}
	defer ln.Close()
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*131 + i>>11)
	}
	answer := want[:n/4]
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		b := make([]byte, n)
		if _, err := io.ReadFull(c, b); err != nil {
			errc <- fmt.Errorf("server read: %w", err)
			return
		}
		if !bytes.Equal(b, want) {
			errc <- errors.New("the server received other bytes than sent")
			return
		}
		_, err = c.Write(answer)
		errc <- err
	}()
	err := src.Do(func() error {
		d := net.Dialer{Timeout: 30 * time.Second}
		c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(want); err != nil {
			return err
		}
		b := make([]byte, len(answer))
		if _, err := io.ReadFull(c, b); err != nil {
			return fmt.Errorf("client read of the answer: %w", err)
		}
		if !bytes.Equal(b, answer) {
			return errors.New("the client received another answer than sent")
		}
		return nil
	})
	if err != nil {
		return err
	}
	return <-errc
}
