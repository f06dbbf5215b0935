package writer

import (
	"context"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// newDoor returns a port door on db tagging rows with gen, outside any Writer (no turn).
func newDoor(db DB, gen int64) *portDoor {
	return &portDoor{db: db, gen: func() int64 { return gen }}
}

// stillClock is a batch.Clock that never advances: with Linger, a batch goes only when full.
type stillClock struct{ now time.Time }

func newFakeClock() *stillClock { return &stillClock{now: time.Unix(1_000_000, 0)} }

func (c *stillClock) Now() time.Time                       { return c.now }
func (c *stillClock) After(time.Duration) <-chan time.Time { return nil }

// eventually polls cond (a condition, not a timing) for up to 20s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.EventuallyTrue(t, 20*time.Second, time.Millisecond, what, cond)
}

var _ DB = (*ovsdb.Client)(nil)

// portOutcome is what one Submit of a port request returned, with the port's name.
type portOutcome struct {
	name string
	r    PortResult
	err  error
}

// startPorts starts a Batcher of port requests keyed by portKey on c, closed when the test ends.
func startPorts(t *testing.T, ctx context.Context, c batch.Committer[PortRequest, PortResult], opts batch.Options[PortRequest]) *batch.Batcher[PortRequest, PortResult] {
	t.Helper()
	opts.Key = portKey
	b, err := batch.Start[PortRequest, PortResult](ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(ctx) })
	return b
}

// submitEach submits a request for every spec, each from a goroutine of its own, and returns
// the channel their outcomes arrive on (buffered for all of them).
func submitEach(ctx context.Context, b *batch.Batcher[PortRequest, PortResult], specs []ovsdb.PortOn) <-chan portOutcome {
	out := make(chan portOutcome, len(specs))
	for _, spec := range specs {
		go func() {
			r, err := b.Submit(ctx, PortRequest{Spec: spec})
			out <- portOutcome{spec.Port.Name, r, err}
		}()
	}
	return out
}
