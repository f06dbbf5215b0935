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

// The names below are the simulator's names from before it moved to
// ovsdb/simvswitchd. They stay only for the tests of package vswitchd, whose
// files are being split in parallel (issue 13); once those tests use
// StartOVSVswitchd and package simvswitchd directly, delete them.

// StartVswitchd is StartOVSVswitchd (kept for package vswitchd's tests).
func StartVswitchd(t testing.TB, s *Server, opts ...simvswitchd.Option) *simvswitchd.Switch {
	t.Helper()
	return StartOVSVswitchd(t, s, opts...)
}

// NewVswitchd is simvswitchd.New (kept for package vswitchd's tests).
func NewVswitchd(ctx context.Context, cfg VswitchdConfig) (*simvswitchd.Switch, error) {
	return simvswitchd.New(ctx, cfg)
}

// VswitchdConfig is simvswitchd.Config (kept for package vswitchd's tests).
type VswitchdConfig = simvswitchd.Config

// DevargsPolicy is simvswitchd.DevargsPolicy (kept for package vswitchd's tests).
type DevargsPolicy = simvswitchd.DevargsPolicy

// WithDevargs is simvswitchd.WithDevargs (kept for package vswitchd's tests).
func WithDevargs(p DevargsPolicy) simvswitchd.Option { return simvswitchd.WithDevargs(p) }
