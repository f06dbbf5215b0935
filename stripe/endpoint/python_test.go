package endpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/stripe/endpoint"
)

// python is Debian's interpreter (the one on PATH may be another).
const python = "/usr/bin/python3"

// TestPythonClient runs examples/stripe/stripe_client.py (standard library only) against an
// endpoint over each socket kind: it sends ten messages to a Go application on the peer node
// and prints the three the Go application sends back.
func TestPythonClient(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s is needed to run the Python example client (Debian package python3-minimal): %v", python, err)
	}
	script, err := filepath.Abs("../../examples/stripe/stripe_client.py")
	if err != nil {
		t.Fatal(err)
	}
	ta, tb := memPair(1400, 1)
	a := startEndpoint(t, ta, 2, []float64{1e9}, nil)
	b := startEndpoint(t, tb, 1, []float64{1e9}, nil)
	for i, kind := range []string{"unix", "tcp", "udp"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			dialA := serve(t, a, kind)
			holder := dialA(t)
			where := holder.Conn().RemoteAddr().String()
			if _, err := holder.Register(ctx, endpoint.Registration{Name: "taken-" + kind, Service: 8, LocalPort: 1, PeerNode: 2, PeerPort: 1}); err != nil {
				t.Fatal(err)
			}
			port := uint16(1000 + i)
			peer := serve(t, b, kind)(t)
			pid, err := peer.Register(ctx, endpoint.Registration{Name: "go-" + kind, Service: 7, LocalPort: 2000, PeerNode: 1, PeerPort: port})
			if err != nil {
				t.Fatal(err)
			}
			args := []string{script, "--" + kind, where, "--name", "py-" + kind, "--service", "7",
				"--port", fmt.Sprint(port), "--peer-node", "2", "--peer-port", "2000", "--receive", "3", "--send"}
			for k := range 10 {
				args = append(args, fmt.Sprintf("from python %d", k))
			}
			cmd := exec.CommandContext(ctx, python, args...)
			var out bytes.Buffer
			var errb testkit.LogBuffer // read on a failure while the child may still write
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for k := range 10 {
				m, err := peer.Next(ctx)
				if err != nil || m.App != pid || string(m.Payload) != fmt.Sprintf("from python %d", k) {
					t.Fatalf("message %d from python: %+v, %v (stderr %s)", k, m, err, errb.String())
				}
			}
			for k := range 3 {
				if err := peer.Send(ctx, pid, 0, fmt.Appendf(nil, "from go %d", k)); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("python client: %v\nstderr: %s", err, errb.String())
			}
			if want := "from go 0\nfrom go 1\nfrom go 2\n"; out.String() != want {
				t.Fatalf("python client printed %q, want %q", out.String(), want)
			}
			// A refusal: the name is taken.
			refused := exec.CommandContext(ctx, python, script, "--"+kind, where, "--name", "taken-"+kind, "--service", "7",
				"--port", "3000", "--peer-node", "2", "--peer-port", "1")
			msg, err := refused.CombinedOutput()
			if err == nil || !strings.Contains(string(msg), "ALREADY_REGISTERED") {
				t.Fatalf("python client with a taken name: %v, %s", err, msg)
			}
			if err := peer.Deregister(ctx, pid); err != nil {
				t.Fatal(err)
			}
		})
	}
}
