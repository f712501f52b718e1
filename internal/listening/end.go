package listening

// End is how a subscription served in its own way ends, the part every
// Impl shares: Done closes once the subscription has ended, and Err is
// why, nil until then. Embed a *End (NewEnd) for the Impl's Done and Err.
type End struct {
	done chan struct{}
	err  error // written once, before done closes
}

// NewEnd returns the end of a subscription that runs.
func NewEnd() *End { return &End{done: make(chan struct{})} }

// Done is closed once the subscription has ended.
func (e *End) Done() <-chan struct{} { return e.done }

// Err is why the subscription ended: nil while it runs and after a
// graceful end (err nil).
func (e *End) Err() error {
	select {
	case <-e.done:
		return e.err
	default:
		return nil
	}
}

// Finish records why the subscription ended and closes Done. Call it
// once, from the goroutine that ends the subscription.
func (e *End) Finish(err error) {
	e.err = err
	close(e.done)
}
