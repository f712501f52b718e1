package testutil

import (
	"testing"
	"time"
)

// Receive returns the next value from ch, or fails tb ("timed out after
// <within> waiting for <what>") when none comes in time.
func Receive[T any](tb testing.TB, ch <-chan T, within time.Duration, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		tb.Fatalf("timed out after %s waiting for %s", within, what)
		panic("unreachable")
	}
}
