package calls

import (
	"testing"
	"time"
)

type progress struct{ n int }
type status struct{ s string }

// Reading a list of options allocates nothing, and a later option of a
// setting wins.
func TestOfAllocatesNothing(t *testing.T) {
	var got []int
	opts := []Option[progress, status]{
		Duration[progress, status](KeyTimeout, time.Second),
		Duration[progress, status](KeyTimeout, 2*time.Second),
		OnProgress[progress, status](func(p progress) { got = append(got, p.n) }),
		Flag[progress, status](KeyIdempotent),
		Count[progress, status](KeyMaxPages, 3),
		{},
	}
	var s Settings[progress, status]
	if n := testing.AllocsPerRun(100, func() { s = Of(opts) }); n != 0 {
		t.Fatalf("Of allocates %v times; want none", n)
	}
	if s.Timeout != 2*time.Second || !s.Idempotent || s.MaxPages != 3 || s.OnProgress == nil || s.ResetTimeoutOnProgress {
		t.Fatalf("settings %+v", s)
	}
	s.OnProgress(progress{7})
	if len(got) != 1 || got[0] != 7 {
		t.Fatalf("OnProgress ran with %v", got)
	}
}
