package ovsdbtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// DialTimeout bounds connecting and setting up the monitor in Dial and Client.
const DialTimeout = 30 * time.Second

// Dial returns a libovsdb client for the vswitch schema connected to
// endpoint and monitoring every table, so its cache mirrors the database.
// The caller owns the client and must Close it. opts are appended after the
// endpoint option.
func Dial(ctx context.Context, endpoint string, opts ...client.Option) (client.Client, error) {
	dbModel, err := vswitch.FullDatabaseModel()
	if err != nil {
		return nil, fmt.Errorf("ovsdbtest: vswitch model: %w", err)
	}
	c, err := client.NewOVSDBClient(dbModel, append([]client.Option{client.WithEndpoint(endpoint)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("ovsdbtest: new client for %s: %w", endpoint, err)
	}
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("ovsdbtest: connect to %s: %w", endpoint, err)
	}
	if _, err := c.MonitorAll(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("ovsdbtest: monitor %s: %w", endpoint, err)
	}
	return c, nil
}

// ReconnectOption makes a client reconnect forever, retrying every interval.
// libovsdb panics when its reconnect backoff gives up, so this backoff never
// does.
func ReconnectOption(interval time.Duration) client.Option {
	return client.WithReconnect(DialTimeout, backoff.NewConstantBackOff(interval))
}

// Client is Dial for tests: it connects to the server, fails t on error and
// closes the client in t.Cleanup (before the Server if Start ran earlier).
func (s *Server) Client(t testing.TB, opts ...client.Option) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	c, err := Dial(ctx, s.Endpoint(), opts...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(c.Close)
	return c
}
