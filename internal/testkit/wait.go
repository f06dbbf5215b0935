package testkit

import (
	"errors"
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

// EventuallyTrue is Eventually for a condition that has no error to tell: it fails tb with
// "timed out waiting for " and what when cond has not returned true by timeout.
func EventuallyTrue(tb testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	tb.Helper()
	Eventually(tb, timeout, interval, func() error {
		if !cond() {
			return errors.New("timed out waiting for " + what)
		}
		return nil
	})
}
