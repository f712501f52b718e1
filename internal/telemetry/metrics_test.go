package telemetry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

type ctxKey struct{}

// A measurement's ctx keeps its values but not its cancellation (the SDK
// drops a measurement whose ctx is done), and detaching costs nothing
// when there is nothing to detach.
func TestDetachedKeepsValuesDropsCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	cancel()
	d := Detached(ctx)
	assert.NoError(t, d.Err())
	assert.Nil(t, d.Done())
	assert.Equal(t, "v", d.Value(ctxKey{}))

	bg := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Detached(bg) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Detached(d) }), "detached once is enough")
}

// NoCancel is Detached held in a struct of the caller's: the same ctx,
// values kept, never done (context.Cause too), at no allocation.
func TestNoCancelIsDetachedWithoutAllocating(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
	var nc NoCancel
	d := nc.Detach(ctx)
	cancel(assert.AnError)
	assert.NoError(t, d.Err())
	assert.NoError(t, context.Cause(d), "the caller's cause is not the measurement's")
	assert.Nil(t, d.Done())
	_, has := d.Deadline()
	assert.False(t, has)
	assert.Equal(t, "v", d.Value(ctxKey{}))
	assert.Same(t, d, Detached(d), "detached once is enough")

	bg := context.Background()
	var other NoCancel
	assert.Equal(t, bg, other.Detach(bg), "nothing to detach: ctx as it is")

	live, stop := context.WithCancel(context.Background())
	defer stop()
	var held NoCancel
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = held.Detach(live) }))
}
