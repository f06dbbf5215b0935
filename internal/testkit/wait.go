package testkit

import (
	"testing"
	"time"
)

// Eventually calls cond every interval until it returns nil, and fails tb with cond's last
// error when timeout passes first. It asserts an outcome, never a duration.
func Eventually(tb testing.TB, timeout, interval time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal(err)
		}
		time.Sleep(interval)
	}
}
