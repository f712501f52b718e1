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
