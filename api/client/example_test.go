package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// Example plugs a vhost-user port into a bridge from a Go program embedding the client: dial,
// apply, wait until ovs-vswitchd has the port, read it back, tell a missing object from an
// unreachable daemon, delete. A real program dials model.DefaultAPIAddr() (or $OVSPLANE_API);
// here the daemon is an in-process API server on a fake backend, so the example runs anywhere.
func Example() {
	addr, stop := exampleServer()
	defer stop()

	c, err := client.Dial(addr)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := c.ApplyBridge(ctx, connect.NewRequest(&v1.ApplyBridgeRequest{
		Bridge: &v1.Bridge{Name: "br0", DatapathType: "netdev"}})); err != nil {
		fmt.Println("ApplyBridge:", err)
		return
	}
	tag, mtu := int32(100), int32(9000)
	if _, err := c.ApplyPort(ctx, connect.NewRequest(&v1.ApplyPortRequest{Bridge: "br0", Port: &v1.Port{
		Name: "vm1-eth0", Tag: &tag,
		ExternalIds: map[string]string{"vm-id": "3f6c2a51-8e0d-4b7a-9c11-0d2e4f6a8b90"},
		Interfaces: []*v1.Interface{{Name: "vm1-eth0", Type: "dpdkvhostuserclient",
			Options: map[string]string{"vhost-server-path": "/var/run/vm1/eth0.sock"}, MtuRequest: &mtu}},
	}})); err != nil {
		fmt.Println("ApplyPort:", err)
		return
	}
	ready, err := c.WaitReady(ctx, connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/vm1-eth0", "interface/vm1-eth0"}}))
	if err != nil {
		fmt.Println("WaitReady:", err)
		return
	}
	for _, s := range ready.Msg.GetStatuses() {
		fmt.Println(s.GetKey(), s.GetState())
	}
	got, err := c.GetPort(ctx, connect.NewRequest(&v1.GetPortRequest{Name: "vm1-eth0"}))
	if err != nil {
		fmt.Println("GetPort:", err)
		return
	}
	fmt.Println("tag", got.Msg.GetPort().GetSpec().GetTag(), "on", got.Msg.GetPort().GetBridge())

	// Errors carry a code: a missing object is CodeNotFound; a daemon that is not running is
	// ErrUnreachable (and CodeUnavailable).
	_, err = c.GetPort(ctx, connect.NewRequest(&v1.GetPortRequest{Name: "nope"}))
	fmt.Println("missing port:", connect.CodeOf(err))
	gone, _ := client.Dial("unix:" + filepath.Join(os.TempDir(), "no-ovsplaned-here.sock"))
	_, err = gone.Health(ctx, connect.NewRequest(&v1.HealthRequest{}))
	fmt.Println("no daemon:", errors.Is(err, client.ErrUnreachable), connect.CodeOf(err))

	if _, err := c.DeletePort(ctx, connect.NewRequest(&v1.DeletePortRequest{Name: "vm1-eth0"})); err != nil {
		fmt.Println("DeletePort:", err)
	}
	// Output:
	// port/vm1-eth0 STATE_READY
	// interface/vm1-eth0 STATE_READY
	// tag 100 on br0
	// missing port: not_found
	// no daemon: true unavailable
}

// exampleServer serves the API on a fake backend on a unix socket in a fresh directory and
// returns its address and a function that stops it.
func exampleServer() (addr string, stop func()) {
	dir, err := os.MkdirTemp("", "ovsplane-example")
	if err != nil {
		panic(err)
	}
	listening := make(chan string, 1)
	srv := apiserver.New(apitest.New(), apiserver.Options{
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnListen: func(a string) { listening <- a },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, config.API{Listen: []string{"unix:" + filepath.Join(dir, "api.sock")}}) }()
	select {
	case addr = <-listening:
	case err := <-done:
		panic(fmt.Sprintf("Serve: %v", err))
	}
	return addr, func() {
		cancel()
		<-done
		_ = os.RemoveAll(dir)
	}
}
