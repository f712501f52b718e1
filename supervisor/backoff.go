package supervisor

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is the delay before a restart: Initial for the first restart
// within the intensity window, multiplied by Multiplier for each further
// one, capped at Max, then spread by ±Jitter (a fraction, 0 to 1) so that
// the members of a pool do not restart in step.
//
// The exponent is the number of restarts inside the intensity window, so
// the delay decays back to Initial once a server has stayed up for a
// window. (protoactor-go's ExponentialBackoffStrategy grows linearly and
// adds nanoseconds of noise, hence this type.)
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64
}

func (b Backoff) validate() error {
	switch {
	case b.Initial <= 0 || b.Max < b.Initial:
		return errors.New("need 0 < Initial <= Max")
	case !(b.Multiplier >= 1) || math.IsInf(b.Multiplier, 1): // NaN too: it made the delay negative
		return errors.New("Multiplier must be a finite number of at least 1")
	case !(b.Jitter >= 0 && b.Jitter <= 1):
		return errors.New("Jitter must be between 0 and 1")
	}
	return nil
}

// delay is the wait before the n-th restart within the window (n >= 1).
func (b Backoff) delay(n int) time.Duration {
	d := float64(b.Initial)
	for i := 1; i < n && d < float64(b.Max); i++ {
		d *= b.Multiplier
	}
	d = min(d, float64(b.Max))
	if b.Jitter > 0 {
		d *= 1 - b.Jitter + 2*b.Jitter*rand.Float64()
	}
	return time.Duration(d)
}

// intensity counts restarts in a sliding window (OTP's MaxR in MaxT).
// protoactor-go's RestartStatistics would do, but it never forgets old
// failures: its slice grows for the life of a long-running supervisor.
// Only the supervisor actor uses it.
type intensity struct {
	max    int
	window time.Duration
	times  []time.Time
}

// add records a restart at now and returns how many fall inside the
// window, this one included.
func (in *intensity) add(now time.Time) int {
	kept := in.times[:0]
	for _, t := range in.times {
		if now.Sub(t) < in.window {
			kept = append(kept, t)
		}
	}
	in.times = append(kept, now)
	return len(in.times)
}

// inWindow counts the restarts recorded inside the window at now.
func (in *intensity) inWindow(now time.Time) int {
	n := 0
	for _, t := range in.times {
		if now.Sub(t) < in.window {
			n++
		}
	}
	return n
}

// exceeded reports whether n restarts in the window pass the limit.
func (in *intensity) exceeded(n int) bool { return n > in.max }
