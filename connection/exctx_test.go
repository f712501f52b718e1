package connection

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An exchange's context behaves as a context.WithCancel of Background:
// contexts derived from it (as net/http derives one per request) end
// with it, a derived context that ended first leaves nothing behind, and
// context.AfterFunc runs once it is cancelled.
func TestExchangeCtx(t *testing.T) {
	var c exchangeCtx
	require.NoError(t, c.Err())
	done := c.Done()
	select {
	case <-done:
		t.Fatal("done before cancel")
	default:
	}

	// A child that ends first unregisters (the request finished).
	early, endEarly := context.WithCancelCause(&c)
	endEarly(nil)
	assert.Nil(t, c.first.f, "the ended child left nothing registered")

	// Two live children at once: the second takes a slot of its own.
	a, cancelA := context.WithCancel(&c)
	defer cancelA()
	b, cancelB := context.WithCancel(&c)
	defer cancelB()
	ran := make(chan struct{})
	stop := context.AfterFunc(&c, func() { close(ran) })
	defer stop()

	c.cancel()
	c.cancel() // again: nothing more
	<-done
	<-a.Done()
	<-b.Done()
	<-ran
	assert.ErrorIs(t, c.Err(), context.Canceled)
	assert.ErrorIs(t, a.Err(), context.Canceled)
	assert.ErrorIs(t, context.Cause(early), context.Canceled, "the early child kept its own end")

	// Derived after the cancel: done at once.
	late, cancelLate := context.WithCancel(&c)
	defer cancelLate()
	<-late.Done()
	var fresh exchangeCtx
	fresh.cancel()
	<-fresh.Done() // asked only after the cancel
}
