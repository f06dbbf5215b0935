//go:build linux

package lab

import (
	"context"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// cmdTimeout bounds every short command the lab runs for a test-taking helper (ovs-vsctl, ip, tc…).
const cmdTimeout = 30 * time.Second

// testContext returns a context for a helper that took t instead of a context: it ends after
// timeout, and, unlike t.Context(), it also works inside t.Cleanup functions (t.Context() is
// cancelled just before they run), so cleanup code may call Vsctl, Appctl or Run.
func testContext(t testing.TB, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(t.Context()), timeout)
}

// WaitFor calls cond every 100 ms until it returns nil. When timeout passes first it fails the
// test with what and cond's last error. cond receives a context that ends at the timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := testContext(t, timeout)
	defer cancel()
	if err := ovsproc.Poll(ctx, cond); err != nil {
		t.Fatalf("lab: waiting %v for %s: %v", timeout, what, err)
	}
}
