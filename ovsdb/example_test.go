package ovsdb_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
)

// Build a DPDK bridge with one NIC and one vhost-user port in one transaction, wait for
// ovs-vswitchd to apply it, and read back what it reported. (Here the database is the in-memory
// test server with a simulated ovs-vswitchd; against a real one only the endpoint changes.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, _ := ovsdbtest.New(ctx, ovsdbtest.Config{})
	defer srv.Close()
	sim, _ := simvswitchd.New(ctx, simvswitchd.Config{Endpoint: srv.Endpoint()})
	defer sim.Close()

	c, err := ovsdb.Dial(ctx, ovsdb.Config{Endpoints: []string{srv.Endpoint()}, Owner: "example",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	res, err := c.NewTxn(1).
		SetGlobal(map[string]string{ovsdb.DPDKInit: "true", ovsdb.DPDKSocketMem: "1024"}).
		EnsureBridge(model.Bridge{Name: "br0", DatapathType: "netdev"}, nil).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "dpdk0", Interfaces: []model.Interface{{
			Name: "dpdk0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:01:00.0"}}}}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "vm1", Interfaces: []model.Interface{{
			Name: "vm1", Type: "dpdkvhostuserclient", OFPortRequest: ptr(10),
			Options: map[string]string{"vhost-server-path": "/run/vm1.sock"}}}}}).
		EnsurePort(ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "typo0", Interfaces: []model.Interface{{
			Name: "typo0", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:zz"}}}}}).
		Commit(ctx, ovsdb.CommitOptions{})
	var applyErr *ovsdb.ApplyError
	if err != nil && !errors.As(err, &applyErr) {
		fmt.Println(err)
		return
	}
	for _, st := range res.Interfaces {
		fmt.Printf("%s ofport=%d error=%q\n", st.Name, st.Ofport, st.Error)
	}
	fmt.Println(err)
	// Output:
	// br0 ofport=65534 error=""
	// dpdk0 ofport=1 error=""
	// vm1 ofport=10 error=""
	// typo0 ofport=-1 error="Error attaching device '0000:zz' to DPDK"
	// interface "typo0": ovs-vswitchd: Error attaching device '0000:zz' to DPDK
}
