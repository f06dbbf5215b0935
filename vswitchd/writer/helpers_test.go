package writer

import (
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb"
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
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var _ DB = (*ovsdb.Client)(nil)
