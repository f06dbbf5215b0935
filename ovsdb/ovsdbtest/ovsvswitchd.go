package ovsdbtest

import (
	"context"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
)

// StartOVSVswitchd starts a simulated ovs-vswitchd (simvswitchd.Switch)
// connected to s: it fails t on error and registers Close with t.Cleanup
// (which runs before the Server's Close when s was started first).
func StartOVSVswitchd(t testing.TB, s *Server, opts ...simvswitchd.Option) *simvswitchd.Switch {
	t.Helper()
	cfg := simvswitchd.Config{Endpoint: s.Endpoint()}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	sw, err := simvswitchd.New(ctx, cfg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(sw.Close)
	return sw
}
